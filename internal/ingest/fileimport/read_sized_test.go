package fileimport

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
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
	keepText(t)
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

// TestReadDropsText: once validated, a file is its series and samples in
// file order, without the duplicates; its text is not kept.
func TestReadDropsText(t *testing.T) {
	in := "a{x=\"1\"} 1 1700000000000\nb 2 1700000000000\na{x=\"1\"} 1 1700000000000\na{x=\"1\"} 3 1700000001000\n"
	f, err := Read("m.prom", strings.NewReader(in), DefaultOptions(time.Now()))
	require.NoError(t, err)
	require.Nil(t, f.data)
	require.Equal(t, 2, f.Series)
	require.Equal(t, 3, f.Samples)
	require.Equal(t, 1, f.Duplicates)
	var got []string
	_, err = f.each(0, math.MaxInt64, func(lset labels.Labels, ts int64, v float64) error {
		got = append(got, fmt.Sprintf("%s %g %d", lset, v, ts))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{`{__name__="a", x="1"} 1 1700000000000`, `{__name__="b"} 2 1700000000000`, `{__name__="a", x="1"} 3 1700000001000`}, got)
}
