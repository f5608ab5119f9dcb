package drift

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// ErrInput marks bad input: a file, a column or a value the caller must fix.
var ErrInput = errors.New("bad input")

// FieldKind says what a field holds.
type FieldKind uint8

// The field kinds.
const (
	Missing FieldKind = iota
	Text
	Number
)

// Field is one cell of a row: text from CSV, a number or text from Parquet.
type Field struct {
	Kind FieldKind
	Text string
	Num  float64
}

// Source streams the rows of one file.
type Source interface {
	// Columns are the column names, in file order.
	Columns() []string
	// Next returns the next row, one field per column, valid until the
	// next call; io.EOF ends the rows.
	Next() ([]Field, error)
	Close() error
}

// Opener opens a source from its start; a reference is opened twice when
// its values overflow the exact store.
type Opener func() (Source, error)

// FileOpener opens path as Parquet (by its .parquet extension or its PAR1
// magic bytes), gzip-compressed CSV (by its magic bytes) or CSV.
func FileOpener(path string) Opener {
	return func() (Source, error) { return OpenFile(path) }
}

// OpenFile opens one file; see FileOpener.
func OpenFile(path string) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var src Source
	switch {
	case n == 4 && string(magic[:]) == "PAR1" || strings.HasSuffix(path, ".parquet"):
		src, err = newParquet(f)
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		var zr *gzip.Reader
		zr, err = gzip.NewReader(f)
		if err == nil {
			src, err = newCSV(zr, multiCloser{zr, f})
		}
	default:
		src, err = newCSV(f, f)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return src, nil
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func checkColumns(head []string) ([]string, error) {
	cols := make([]string, len(head))
	seen := make(map[string]bool, len(head))
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			return nil, fmt.Errorf("%w: header: column %d has no name", ErrInput, i+1)
		}
		if seen[h] {
			return nil, fmt.Errorf("%w: header: column %q appears twice", ErrInput, h)
		}
		seen[h] = true
		cols[i] = h
	}
	return cols, nil
}

// parquetSource reads the leaf columns of a Parquet file, row group by row
// group, a batch of rows at a time.
type parquetSource struct {
	f      *os.File
	groups []parquet.RowGroup
	rr     parquet.Rows
	cols   []string
	rows   []parquet.Row
	n, i   int
	fields []Field
}

func newParquet(f *os.File) (Source, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%w: parquet: %w", ErrInput, err)
	}
	var cols []string
	for _, p := range pf.Schema().Columns() {
		cols = append(cols, strings.Join(p, "."))
	}
	if _, err := checkColumns(cols); err != nil {
		return nil, err
	}
	return &parquetSource{f: f, groups: pf.RowGroups(), cols: cols, rows: make([]parquet.Row, 256), fields: make([]Field, len(cols))}, nil
}

// fill reads the next batch of rows, moving on to the next row group when
// one ends.
func (s *parquetSource) fill() error {
	for {
		if s.rr == nil {
			if len(s.groups) == 0 {
				return io.EOF
			}
			s.rr = s.groups[0].Rows()
			s.groups = s.groups[1:]
		}
		n, err := s.rr.ReadRows(s.rows)
		s.n, s.i = n, 0
		if n > 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: parquet: %w", ErrInput, err)
		}
		if err := s.rr.Close(); err != nil {
			return fmt.Errorf("parquet: %w", err)
		}
		s.rr = nil
	}
}

func (s *parquetSource) Columns() []string { return s.cols }

func (s *parquetSource) Next() ([]Field, error) {
	if s.i == s.n {
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
	row := s.rows[s.i]
	s.i++
	clear(s.fields)
	for _, v := range row {
		c := v.Column()
		if c < 0 || c >= len(s.fields) || v.IsNull() {
			continue
		}
		switch v.Kind() {
		case parquet.Boolean:
			s.fields[c] = Field{Kind: Text, Text: fmt.Sprint(v.Boolean())}
		case parquet.Int32:
			s.fields[c] = Field{Kind: Number, Num: float64(v.Int32())}
		case parquet.Int64:
			s.fields[c] = Field{Kind: Number, Num: float64(v.Int64())}
		case parquet.Float:
			s.fields[c] = Field{Kind: Number, Num: float64(v.Float())}
		case parquet.Double:
			s.fields[c] = Field{Kind: Number, Num: v.Double()}
		case parquet.ByteArray, parquet.FixedLenByteArray:
			s.fields[c] = Field{Kind: Text, Text: string(v.ByteArray())}
		}
	}
	return s.fields, nil
}

func (s *parquetSource) Close() error {
	var err error
	if s.rr != nil {
		err = s.rr.Close()
	}
	return errors.Join(err, s.f.Close())
}
