//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// File is one dashboard, ready to write.
type File struct {
	// Name is the file's name, e.g. vigil-gpus.json.
	Name string
	// Title is the dashboard's title.
	Title string
	// JSON is the dashboard model Grafana imports.
	JSON []byte
}

// builders are the dashboards, in the order they are written.
var builders = []func() *dashboard.DashboardBuilder{platform, gpus, inference, failures, incidents}

// Build returns every dashboard, each as indented JSON ending in a newline.
func Build() ([]File, error) {
	out := make([]File, 0, len(builders))
	for _, b := range builders {
		d, err := b().Build()
		if err != nil {
			return nil, fmt.Errorf("build dashboard: %w", err)
		}
		numberPanels(&d)
		raw, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode dashboard %s: %w", *d.Uid, err)
		}
		out = append(out, File{Name: *d.Uid + ".json", Title: deref(d.Title), JSON: append(raw, '\n')})
	}
	return out, nil
}

// Write writes every dashboard into dir, created if missing, and returns
// the paths written.
func Write(dir string) ([]string, error) {
	files, err := Build()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory %s: %w", dir, err)
	}
	paths := make([]string, 0, len(files))
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.JSON, 0o644); err != nil {
			return nil, fmt.Errorf("write dashboard: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// numberPanels gives every panel and row its id, unique in the
// dashboard, in order from 1.
func numberPanels(d *dashboard.Dashboard) {
	id := uint32(0)
	for _, p := range d.Panels {
		id++
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
