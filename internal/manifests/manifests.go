package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/internal/config"
)

// ErrValues marks an error caused by the values given (a file that cannot
// be read or parsed, a --set that does not parse, values the chart's schema
// refuses, a template's fail, a vigil.yaml vigil serve would refuse): bad
// input, as opposed to a broken chart.
var ErrValues = errors.New("invalid values")

// DefaultRelease is the release name objects are named after.
const DefaultRelease = "vigil"

// Options are the inputs of a render.
type Options struct {
	// ValuesFiles are YAML files merged over the chart's values.yaml in
	// order, as helm's --values.
	ValuesFiles []string
	// Set are helm --set expressions (a.b=c, list[0]=x), applied after the
	// files in order.
	Set []string
	// Namespace is the release's namespace (default "default").
	Namespace string
	// Release is the release name (default DefaultRelease).
	Release string
}

// Manifest is one rendered Kubernetes object.
type Manifest struct {
	// Source is the template it came from ("vigil/templates/service.yaml").
	Source string
	// Kind and Name are the object's.
	Kind, Name string
	// Content is the object's YAML document, without "---", ending in a
	// line break.
	Content string
}

// LoadChart reads a chart from fsys, rooted at the chart directory. The
// ci/ scenarios are left out, as the chart's .helmignore leaves them out of
// a package.
func LoadChart(fsys fs.FS) (*chart.Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == "ci":
			return fs.SkipDir
		case d.IsDir():
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: p, Data: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return ch, nil
}

// ReadValues merges the values files and --set expressions of opts, in
// order, as helm install does (not yet the chart's own values).
func ReadValues(opts Options) (map[string]any, error) {
	vals := map[string]any{}
	for _, name := range opts.ValuesFiles {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%w: read values file: %w", ErrValues, err)
		}
		v, err := loader.LoadValues(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: values file %s: %s", ErrValues, name, yamlMessage(err))
		}
		vals = loader.MergeMaps(vals, v)
	}
	for _, s := range opts.Set {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("%w: --set %s: %w", ErrValues, s, err)
		}
	}
	return vals, nil
}

// Render renders ch with the user's values vals (ReadValues) into
// manifests in Helm's install order, and checks the rendered vigil.yaml
// with vigil serve's own loader.
func Render(ctx context.Context, ch *chart.Chart, vals map[string]any, opts Options) ([]Manifest, error) {
	rel := common.ReleaseOptions{Name: opts.Release, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	if rel.Name == "" {
		rel.Name = DefaultRelease
	}
	if rel.Namespace == "" {
		rel.Namespace = "default"
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, rel, nil, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrValues, schemaMessage(err))
	}
	files, err := engine.Engine{}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, fmt.Errorf("%w: render chart: %w", ErrValues, err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, sorted, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("%w: render chart: %w", ErrValues, err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("render chart: %s is a hook, and the chart has none", hooks[0].Path)
	}
	out := make([]Manifest, 0, len(sorted))
	for _, m := range sorted {
		mf := Manifest{Source: m.Name, Kind: m.Head.Kind, Content: strings.TrimSpace(m.Content) + "\n"}
		if m.Head.Metadata != nil {
			mf.Name = m.Head.Metadata.Name
		}
		out = append(out, mf)
	}
	if err := checkConfig(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Write prints ms as one multi-document YAML stream, each document headed by
// the template it came from, as `helm template` prints them.
func Write(w io.Writer, ms []Manifest) error {
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s", m.Source, m.Content)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ConfigFile is the key of vigil.yaml in the chart's ConfigMap.
const ConfigFile = "vigil.yaml"

// VigilConfig returns the rendered vigil.yaml: the ConfigMap of
// templates/configmap.yaml.
func VigilConfig(ms []Manifest) ([]byte, error) {
	for _, m := range ms {
		if m.Kind != "ConfigMap" || path.Base(m.Source) != "configmap.yaml" {
			continue
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(m.Content), &cm); err != nil {
			return nil, fmt.Errorf("read ConfigMap %s: %w", m.Name, err)
		}
		if s, ok := cm.Data[ConfigFile]; ok {
			return []byte(s), nil
		}
	}
	return nil, fmt.Errorf("no ConfigMap holds %s", ConfigFile)
}

// checkConfig loads the rendered vigil.yaml as vigil serve would.
func checkConfig(ms []Manifest) error {
	b, err := VigilConfig(ms)
	if err != nil {
		return fmt.Errorf("render chart: %w", err)
	}
	if _, err := config.Parse(ConfigFile, b); err != nil {
		return fmt.Errorf("%w: the rendered %w", ErrValues, err)
	}
	return nil
}

// schemaMessage folds Helm's multi-line schema error ("values don't meet
// the specifications of the schema(s) in the following chart(s):\nvigil:\n-
// at '/image': additional properties 'tga' not allowed\n") into one line.
func schemaMessage(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		switch {
		case l == "", strings.HasPrefix(l, "values don't meet"), strings.HasSuffix(l, ":") && !strings.Contains(l, " "):
			continue
		}
		parts = append(parts, l)
	}
	if len(parts) == 0 {
		return "the values do not match the chart's schema"
	}
	return "the values do not match the chart's schema: " + strings.Join(parts, "; ")
}

// yamlMessage drops the YAML-to-JSON converter's prefixes from a values
// file's parse error.
func yamlMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"cannot unmarshal yaml document: ", "error converting YAML to JSON: ", "error reading yaml document: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// RenderChart loads the chart from fsys (LoadChart), reads the values of
// opts (ReadValues) and renders them (Render).
func RenderChart(ctx context.Context, fsys fs.FS, opts Options) ([]Manifest, error) {
	ch, err := LoadChart(fsys)
	if err != nil {
		return nil, err
	}
	vals, err := ReadValues(opts)
	if err != nil {
		return nil, err
	}
	return Render(ctx, ch, vals, opts)
}
