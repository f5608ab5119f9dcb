package fileimport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadSized: the buffer sized from the file holds the whole input
// whether the hint is right, short (the file grew) or long, and leaves
// room for the newline Read adds.
func TestReadSized(t *testing.T) {
	in := strings.Repeat("abcdefghij", 1000)
	for _, hint := range []int64{0, 1, 9999, 10000, 10001, 50000} {
		got, err := readSized(strings.NewReader(in), hint)
		require.NoError(t, err)
		require.Equal(t, in, string(got), "hint %d", hint)
		if hint == int64(len(in)) {
			require.Equal(t, len(in)+1, cap(got), "room for a final newline, no more")
		}
	}
}

// TestReadPlainFile: a file read from disk (sized by its Stat) without a
// final newline reads whole.
func TestReadPlainFile(t *testing.T) {
	var b bytes.Buffer
	for i := range 500 {
		b.WriteString("up{job=\"a\",i=\"")
		b.WriteString(strings.Repeat("x", i%7))
		fmt.Fprintf(&b, "\"} 1 %d\n", 1700000000000+int64(i)*1000)
	}
	body := strings.TrimSuffix(b.String(), "\n")
	p := filepath.Join(t.TempDir(), "m.prom")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	fh, err := os.Open(p)
	require.NoError(t, err)
	defer fh.Close()
	f, err := Read(p, fh, DefaultOptions(time.Now()))
	require.NoError(t, err)
	require.Equal(t, 500, f.Samples)
	require.Equal(t, 7, f.Series)
	require.Equal(t, body+"\n", string(f.data))
}
