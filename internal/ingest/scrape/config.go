package scrape

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v3"
)

// sections are the top-level keys of vigil.yaml that are Prometheus's.
var sections = []string{"global", "scrape_configs", "scrape_config_files"}

// Sections reports whether key is a top-level key this package reads.
func Sections(key string) bool {
	for _, s := range sections {
		if s == key {
			return true
		}
	}
	return false
}

// LoadConfig reads the Prometheus sections of a vigil.yaml document (the
// others are blanked out line for line, so errors keep the file's line
// numbers) with Prometheus's own loader and validation. path names the file
// in errors and anchors relative paths (file_sd files, credentials). A
// document without those sections gives a configuration with no jobs.
func LoadConfig(path string, src []byte, logger *slog.Logger) (*promconfig.Config, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := promconfig.Load(keepSections(src), logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := defaultInterval(cfg, src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if path != "" {
		cfg.SetDirectory(filepath.Dir(path))
	}
	return cfg, nil
}

// DefaultInterval is Vigil's scrape interval when the file sets none
// (Prometheus's is 1m; dcgm-exporter samples every 30 s and a 2-minute
// diagnosis needs more than two points).
const DefaultInterval = 15 * time.Second

// defaultInterval applies DefaultInterval to the global section and to the
// jobs that set no interval of their own, when global sets none.
func defaultInterval(cfg *promconfig.Config, src []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return err
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if hasKey(child(doc, "global"), "scrape_interval") {
		return nil
	}
	cfg.GlobalConfig.ScrapeInterval = model.Duration(DefaultInterval)
	jobs := child(doc, "scrape_configs")
	for i, sc := range cfg.ScrapeConfigs {
		var job *yaml.Node
		if jobs != nil && jobs.Kind == yaml.SequenceNode && i < len(jobs.Content) {
			job = jobs.Content[i]
		}
		if hasKey(job, "scrape_interval") {
			continue
		}
		sc.ScrapeInterval = model.Duration(max(DefaultInterval, time.Duration(sc.ScrapeTimeout)))
	}
	return nil
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func hasKey(n *yaml.Node, key string) bool { return child(n, key) != nil }

// keepSections blanks every line that does not belong to one of sections.
// A section starts at a line "key:" in column 0 and runs to the next line in
// column 0 that is neither blank nor a comment.
func keepSections(src []byte) string {
	lines := bytes.Split(src, []byte("\n"))
	keep := false
	var out strings.Builder
	for i, l := range lines {
		if len(l) > 0 && l[0] != ' ' && l[0] != '\t' && l[0] != '#' {
			key, _, _ := strings.Cut(string(l), ":")
			keep = Sections(strings.TrimSpace(key))
		}
		if keep {
			out.Write(l)
		}
		if i < len(lines)-1 {
			out.WriteByte('\n')
		}
	}
	return out.String()
}
