package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/buildinfo"
)

func newVersionCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: `  vigil version`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			bi := buildinfo.Get()
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(bi)
			}
			_, err := fmt.Fprintf(e.stdout, "vigil %s (revision %s, built %s, %s)\n", bi.Version, orUnknown(bi.Revision), orUnknown(bi.BuildDate), bi.GoVersion)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
