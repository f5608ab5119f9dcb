package ui

import (
	"html/template"
	"strings"
	"time"
)

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmtTime(t)
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("15:04:05")
	},
	"upper": strings.ToUpper,
	// reloadIn is a loading page's reload interval, in seconds.
	"reloadIn": func() int { return loadReload },
}
