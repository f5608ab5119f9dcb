package drift

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stdRecords reads data as encoding/csv does with TrimLeadingSpace (the
// reader before this one): the records up to the first error, and it.
func stdRecords(data []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	var out [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// checkCSV reads data with the sequential and the chunked reader (chunks
// of about size bytes) and requires encoding/csv's records and error.
func checkCSV(t *testing.T, data []byte, size int) {
	t.Helper()
	want, wantErr := stdRecords(data)
	s, err := newCSVSize(bytes.NewReader(data), io.NopCloser(nil), size)
	switch {
	case len(want) == 0 && wantErr == nil:
		require.ErrorContains(t, err, "empty file")
		return
	case len(want) == 0:
		require.EqualError(t, err, "bad input: header: "+wantErr.Error())
		return
	case err != nil:
		_, colErr := checkColumns(want[0])
		require.Error(t, colErr, "header %q: %v", want[0], err)
		return
	}
	ncol := len(s.cols)
	for i := 1; ; i++ {
		raw, err := s.next(ncol)
		if err != nil {
			require.Len(t, want, i, "records read before %v", err)
			if wantErr == nil {
				require.ErrorIs(t, err, io.EOF)
			} else {
				require.EqualError(t, err, wantErr.Error())
			}
			break
		}
		require.Less(t, i, len(want), "a record encoding/csv does not have: %q", raw)
		got := make([]string, len(raw))
		for j, f := range raw {
			got[j] = string(f)
		}
		require.Equal(t, want[i], got, "record %d", i)
	}

	// The chunked reader: odd columns as text, even ones as numbers.
	c, err := newCSVSize(bytes.NewReader(data), io.NopCloser(nil), size)
	require.NoError(t, err)
	slots := make([]slot, ncol)
	for j := range slots {
		slots[j] = slot{col: j, text: j%2 == 1}
	}
	rows, err := c.eachChunk(t.Context(), slots, func(first int64, b *colBatch) error {
		for i := range b.n {
			rec := want[int(first)+i+1]
			for j, sl := range slots {
				checkCell(t, &b.cols[j], i, sl.text, rec[sl.col])
			}
		}
		return nil
	})
	require.EqualValues(t, len(want)-1, rows)
	if wantErr == nil {
		require.NoError(t, err)
	} else {
		require.EqualError(t, err, "bad input: "+wantErr.Error())
	}
}

// checkCell requires cell i of c to be what the reader before this one made
// of the field text w.
func checkCell(t *testing.T, c *cells, i int, text bool, w string) {
	t.Helper()
	if isMissing(w) {
		require.Equal(t, Missing, c.kind[i], "%q", w)
		return
	}
	if text {
		require.Equal(t, Text, c.kind[i], "%q", w)
		require.Equal(t, w, string(c.text[i]))
		return
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil {
		require.Equal(t, Text, c.kind[i], "%q", w)
		require.Equal(t, w, c.textAt(i))
		require.False(t, c.plain)
		return
	}
	require.Equal(t, Number, c.kind[i], "%q", w)
	require.Equal(t, math.Float64bits(v), math.Float64bits(c.num[i]), "%q", w)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		require.False(t, c.plain)
	}
}

// csvCases are inputs where encoding/csv has something to say.
var csvCases = []string{
	"a,b\n1,2\n3,4\n",
	"a,b\r\n1,2\r\n3,4",
	"a,b\n1,2\n3,4\r",
	"a,b\n\n\n1,2\n\r\n3,4\n\n",
	"a, b\n 1,\t2\n\u00a03,\u30004\n",
	"a,b\n1,2\r\r\n3,\r4\n",
	"a,b\n\"1\",\"x,y\"\n\"multi\nline\",2\n3,\"a \"\"quote\"\"\"\n",
	"a,b\n  \"1\",2\n",
	"a,b\n1,\"2\n",
	"a,b\n1,2\"\n3,4\n",
	"a,b\n\"1\"x,2\n",
	"a,b\n1,2,3\n",
	"a,b\n1\n",
	"a,b\n1,2\n\"3\",4,5\n",
	"\"a\nb\",c\n1,2\n",
	"\ufeffa,b\n1,2\n",
	"a,a\n1,2\n",
	",b\n1,2\n",
	"",
	"\n\n",
	"a\n",
	"a,b\nNA,nan\nNaN,\nN/A,null\nNULL,None\n",
	"a,b\n1e400,inf\n-Inf,0x1p-2\n1_0,1e\n+.5,5.\n",
	"a,b\n1.5 ,x\n",
	"a,b\n\"1,\",\"\"\n",
	"a,b\n1,2\n\"a\",\"b\"\r\n3,4",
}

func TestCSVMatchesStdlib(t *testing.T) {
	for _, in := range csvCases {
		for _, size := range []int{1, 3, 8, 64, readSize} {
			t.Run(strconv.Quote(in)+"/"+strconv.Itoa(size), func(t *testing.T) { checkCSV(t, []byte(in), size) })
		}
	}
	// Chunk boundaries everywhere in a longer file with quoted records.
	var b strings.Builder
	b.WriteString("x,y,z\n")
	for i := range 300 {
		switch i % 7 {
		case 0:
			b.WriteString("\"1.5\",\"a\nb\",3\n")
		case 3:
			b.WriteString("\n")
		default:
			b.WriteString(strconv.Itoa(i) + ",-0." + strconv.Itoa(i) + ", c" + strconv.Itoa(i%4) + "\n")
		}
	}
	for _, size := range []int{5, 17, 100, 1000} {
		checkCSV(t, []byte(b.String()), size)
	}
}

// FuzzCSVMatchesStdlib: the reader gives encoding/csv's records and errors
// (with their lines), read whole and in chunks of any size.
func FuzzCSVMatchesStdlib(f *testing.F) {
	for _, in := range csvCases {
		f.Add([]byte(in), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		checkCSV(t, data, int(size%64)+1)
	})
}
