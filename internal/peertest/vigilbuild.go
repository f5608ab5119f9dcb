package peertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildVigil builds the vigil binary once per test process and returns its
// path or the build error, for a test that skips (rather than fails) when
// the binary cannot be built. It shares its build with Vigil: whichever
// runs first builds, the other reuses the result.
func BuildVigil() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin-")
		if err != nil {
			buildErr = fmt.Errorf("make a directory for the binary: %w", err)
			return
		}
		buildPath = filepath.Join(dir, "vigil")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/vigil")
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	return buildPath, buildErr
}
