package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dockerfile returns the Dockerfile's instructions, continuation lines
// joined and comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if rest, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(rest)
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// goBuild returns the Dockerfile's `go build` command and its -o path.
func goBuild(t *testing.T) (cmd, out string) {
	t.Helper()
	var runs []string
	for _, in := range dockerfile(t) {
		if rest, ok := strings.CutPrefix(in, "RUN "); ok && strings.Contains(rest, "go build") {
			runs = append(runs, rest)
		}
	}
	require.Len(t, runs, 1, "one RUN with go build")
	m := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(runs[0])
	require.NotNil(t, m, "the go build line names its output with -o")
	return runs[0], m[1]
}

func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	has := func(want string) {
		t.Helper()
		require.Contains(t, ins, want)
	}
	has("FROM golang:1.26 AS builder")
	has("FROM gcr.io/distroless/static-debian12:nonroot")
	has("USER 65532:65532")
	has("EXPOSE 9700 4317 4318")
	has(`ENTRYPOINT ["/usr/local/bin/vigil", "serve", "--data-dir=/var/lib/vigil"]`)
	require.Equal(t, `ENTRYPOINT ["/usr/local/bin/vigil", "serve", "--data-dir=/var/lib/vigil"]`, ins[len(ins)-1], "the last instruction")

	cmd, out := goBuild(t)
	for _, want := range []string{"CGO_ENABLED=0 go build", "-trimpath", `-ldflags "-s -w -X github.com/vigil-obs/vigil/internal/buildinfo.Version=${VERSION}"`, "./cmd/vigil"} {
		require.Contains(t, cmd, want)
	}
	has("COPY --from=builder " + out + " /usr/local/bin/vigil")
}

// TestDockerfileBuild runs the Dockerfile's own `go build` line (no
// container engine here) and checks the binary: static (no program
// interpreter, no dynamic section), stripped, and it runs.
//
//	go test ./deploy -run DockerfileBuild -v   # logs the binary's size
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole binary with -trimpath and CGO off, a cold build: minutes")
	}
	cmd, out := goBuild(t)
	bin := filepath.Join(t.TempDir(), "vigil")
	cmd = strings.Replace(cmd, "-o "+out, "-o "+bin, 1)
	cmd = strings.ReplaceAll(cmd, "${VERSION}", "9.9.9-imagetest")
	build := exec.CommandContext(t.Context(), "sh", "-c", cmd)
	build.Dir = ".."
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s\n%s", cmd, b)

	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a program interpreter: not static")
		require.NotEqual(t, elf.PT_DYNAMIC, p.Type, "a dynamic section: not static")
	}
	require.Nil(t, f.Section(".interp"))
	require.Nil(t, f.Section(".symtab"), "-s: no symbol table")
	require.Nil(t, f.Section(".debug_info"), "-w: no DWARF")
	st, err := os.Stat(bin)
	require.NoError(t, err)
	t.Logf("static stripped binary: %d bytes (%.1f MB)", st.Size(), float64(st.Size())/1e6)

	v, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", v)
	require.Contains(t, string(v), "vigil 9.9.9-imagetest")
}
