// Package buildinfo owns the version of the binary: set at link time with
// -ldflags "-X github.com/vigil-obs/vigil/internal/buildinfo.Version=…", and
// filled from the Go build information otherwise.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at link time.
var (
	// Version is the release version.
	Version = "0.1.0-dev"
	// Revision is the VCS revision.
	Revision = ""
	// Branch is the VCS branch.
	Branch = ""
	// BuildDate is when the binary was built.
	BuildDate = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Branch    string `json:"branch"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
}

// Get returns the build information, with the VCS revision and time from
// the Go toolchain when they were not set at link time.
func Get() Info {
	i := Info{Version: Version, Revision: Revision, Branch: Branch, BuildDate: BuildDate, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Revision == "":
				i.Revision = s.Value
			case s.Key == "vcs.time" && i.BuildDate == "":
				i.BuildDate = s.Value
			}
		}
	}
	return i
}
