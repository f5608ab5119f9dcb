package incident

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fileFormat is the JSON file that keeps incidents across restarts.
type fileFormat struct {
	Version   int         `json:"version"`
	Incidents []*Incident `json:"incidents"`
}

const fileVersion = 1

// load reads the incidents of path; a missing file is no incidents.
func load(path string) ([]*Incident, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read incidents: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read incidents %s: %w (move the file away to start afresh)", path, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("read incidents %s: version %d, want %d", path, f.Version, fileVersion)
	}
	out := f.Incidents[:0]
	for _, i := range f.Incidents {
		if i == nil || i.ID == "" || (i.State != StateFiring && i.State != StateResolved) ||
			(i.State == StateResolved && i.Resolved == nil) {
			return nil, fmt.Errorf("read incidents %s: an incident without id or with state %q", path, stateOf(i))
		}
		out = append(out, i)
	}
	return out, nil
}

func stateOf(i *Incident) string {
	if i == nil {
		return ""
	}
	return i.State
}

// saveLocked writes the incidents atomically: a temporary file, synced,
// renamed over the old one.
func (t *Tracker) saveLocked() error {
	if t.opts.Path == "" {
		return nil
	}
	data, err := json.MarshalIndent(fileFormat{Version: fileVersion, Incidents: t.sorted()}, "", " ")
	if err != nil {
		return fmt.Errorf("save incidents: %w", err)
	}
	dir := filepath.Dir(t.opts.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save incidents: %w", err)
	}
	f, err := os.CreateTemp(dir, ".incidents-*.json")
	if err != nil {
		return fmt.Errorf("save incidents: %w", err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save incidents: %w", err)
	}
	if err := os.Rename(f.Name(), t.opts.Path); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save incidents: %w", err)
	}
	return nil
}
