package scrape

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v3"
)

// sections are the top-level keys of vigil.yaml that are Prometheus's
// (remote_write: sent by Prometheus's own remote storage).
var sections = []string{"global", "scrape_configs", "scrape_config_files", "remote_write"}

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
		return nil, oneLine(path, src, err)
	}
	if err := defaultInterval(cfg, src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if path != "" {
		cfg.SetDirectory(filepath.Dir(path))
	}
	return cfg, nil
}

var (
	yamlLineErr = regexp.MustCompile(`line (\d+): (.*)`)
	jobNameErr  = regexp.MustCompile(`job name "([^"]*)"`)
	// regexErr is a relabel rule's regular expression that does not
	// compile, as Prometheus anchors it: ^(?s:EXPR)$.
	regexErr = regexp.MustCompile("error parsing regexp: .*`\\^\\(\\?s:(.*)\\)\\$`")
)

// regexLine returns the line of the regex: field whose value is expr, in
// any of the file's sections, or 0.
func regexLine(src []byte, expr string) int {
	var root yaml.Node
	if yaml.Unmarshal(src, &root) != nil {
		return 0
	}
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, v := n.Content[i], n.Content[i+1]; k.Value == "regex" && v.Kind == yaml.ScalarNode && v.Value == expr {
					return v.Line
				}
			}
		}
		for _, c := range n.Content {
			if l := find(c); l > 0 {
				return l
			}
		}
		return 0
	}
	return find(&root)
}

// jobLine returns the line of the job named name in scrape_configs, or 0.
func jobLine(src []byte, name string) int {
	var root yaml.Node
	if yaml.Unmarshal(src, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	jobs := child(root.Content[0], "scrape_configs")
	if jobs == nil || jobs.Kind != yaml.SequenceNode {
		return 0
	}
	line := 0
	for _, j := range jobs.Content {
		if n := child(j, "job_name"); n != nil && n.Value == name {
			line = n.Line // the last one: duplicates are reported at the second
		}
	}
	return line
}

// oneLine turns the YAML library's multi-line "unmarshal errors:\n  line 7:
// msg" into "path:7: msg" (the first error, and how many more), and prefixes
// other errors with "path: scrape_configs:".
func oneLine(path string, src []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var found [][]string
	for _, l := range strings.Split(msg, "\n") {
		if m := yamlLineErr.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		msg = strings.Join(strings.Fields(msg), " ")
		if m := regexErr.FindStringSubmatch(msg); m != nil {
			if line := regexLine(src, m[1]); line > 0 {
				return fmt.Errorf("%s:%d: scrape_configs: regex: %s", path, line, msg)
			}
		}
		if m := jobNameErr.FindStringSubmatch(msg); m != nil {
			if line := jobLine(src, m[1]); line > 0 {
				return fmt.Errorf("%s:%d: scrape_configs: %s", path, line, msg)
			}
		}
		if strings.Contains(msg, "remote_write") || strings.Contains(msg, "remote write") {
			if line := sectionLine(src, "remote_write"); line > 0 {
				return fmt.Errorf("%s:%d: remote_write: %s", path, line, msg)
			}
		}
		return fmt.Errorf("%s: scrape_configs: %s", path, msg)
	}
	more := ""
	if len(found) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(found)-1)
	}
	return fmt.Errorf("%s:%s: %s%s", path, found[0][1], found[0][2], more)
}

// sectionLine returns the line of the top-level key name, or 0.
func sectionLine(src []byte, name string) int {
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, name+":") {
			return i + 1
		}
	}
	return 0
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
// column 0 that is neither blank, a comment nor an item of a block sequence
// ("- job_name: x": YAML lets a mapping's list sit at its key's column).
func keepSections(src []byte) string {
	lines := bytes.Split(src, []byte("\n"))
	keep := false
	var out strings.Builder
	for i, l := range lines {
		item := len(l) > 0 && l[0] == '-' && (len(l) == 1 || l[1] == ' ' || l[1] == '\t' || l[1] == '\r')
		if len(l) > 0 && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && !item {
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

// SectionNames lists the top-level keys this package reads.
func SectionNames() []string { return append([]string(nil), sections...) }
