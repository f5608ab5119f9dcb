package helm

import (
	"embed"
	"io/fs"
)

// chart is the chart directory; all: keeps _helpers.tpl and .helmignore,
// which embed leaves out by default.
//
//go:embed all:vigil
var chart embed.FS

// Chart returns the chart's files, rooted at the chart directory (Chart.yaml,
// values.yaml, templates/...).
func Chart() (fs.FS, error) {
	return fs.Sub(chart, "vigil")
}
