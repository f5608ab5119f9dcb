package drift

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Compare reads its files a batch of rows at a time, column by column, and
// only the columns of the features it compares: a CSV source splits and
// parses chunks of records on every core while the statistics take the
// batches in order (source_chunk.go); any other source is read row by row
// on one goroutine ahead of them.

// slot is a column read into a batch: as a number, or as text (a
// categorical feature).
type slot struct {
	col  int
	text bool
}

// cells is one column of a batch.
type cells struct {
	// kind of each cell: Missing, Number (num holds it) or Text.
	kind []FieldKind
	num  []float64
	// text of each cell of a text column.
	text [][]byte
	// slow are the cells of a number column that strconv parsed or that
	// are no number, with their text for messages.
	slow []slowCell
	// plain: every cell is a finite Number (kind, text and slow need no
	// look).
	plain bool
}

type slowCell struct {
	i    int
	text []byte
}

func (c *cells) reset() {
	c.kind, c.num, c.text, c.slow = c.kind[:0], c.num[:0], c.text[:0], c.slow[:0]
	c.plain = true
}

// textAt returns cell i's text: a text column's, or a slow cell's ("" for
// a number read as one).
func (c *cells) textAt(i int) string {
	if i < len(c.text) {
		return string(c.text[i])
	}
	for _, s := range c.slow {
		if s.i == i {
			return string(s.text)
		}
	}
	return ""
}

// addNumber appends a number cell from its field text.
func (c *cells) addNumber(b []byte) {
	if v, ok := parseDecimal(b); ok {
		c.kind = append(c.kind, Number)
		c.num = append(c.num, v)
		return
	}
	c.plain = false
	if isMissingBytes(b) {
		c.kind = append(c.kind, Missing)
		c.num = append(c.num, 0)
		return
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		c.kind = append(c.kind, Text)
	} else {
		c.kind = append(c.kind, Number)
	}
	c.num = append(c.num, v)
	c.slow = append(c.slow, slowCell{i: len(c.kind) - 1, text: b})
}

// addText appends a text cell.
func (c *cells) addText(b []byte) {
	if isMissingBytes(b) {
		c.kind = append(c.kind, Missing)
		c.text = append(c.text, nil)
		return
	}
	c.kind = append(c.kind, Text)
	c.text = append(c.text, b)
}

// colBatch is rows of the slots' columns, and the error that ended them.
type colBatch struct {
	n     int
	cols  []cells
	arena []byte // text copied for the batch
	err   error
	// hint is an estimate of the source's rows (0: none), for sizing.
	hint int64
}

// reserve makes room for rows cells in every column.
func (b *colBatch) reserve(rows int, slots []slot) {
	for k, sl := range slots {
		c := &b.cols[k]
		if cap(c.kind) < rows {
			c.kind = make([]FieldKind, 0, rows)
		}
		switch {
		case sl.text && cap(c.text) < rows:
			c.text = make([][]byte, 0, rows)
		case !sl.text && cap(c.num) < rows:
			c.num = make([]float64, 0, rows)
		}
	}
}

func (b *colBatch) reset(nslots int) {
	b.n, b.err, b.arena = 0, nil, b.arena[:0]
	if len(b.cols) != nslots {
		b.cols = make([]cells, nslots)
	}
	for i := range b.cols {
		b.cols[i].reset()
	}
}

// keep copies text into the batch's arena.
func (b *colBatch) keep(s string) []byte {
	at := len(b.arena)
	b.arena = append(b.arena, s...)
	return b.arena[at:len(b.arena):len(b.arena)]
}

// batchFunc takes a batch of rows; first is the number of rows before it.
type batchFunc func(first int64, b *colBatch) error

// eachBatch calls fn with the rows of s, in order, a batch at a time, and
// returns the number of rows. Reading runs ahead on other goroutines, which
// have ended when it returns.
func eachBatch(ctx context.Context, s Source, slots []slot, fn batchFunc) (int64, error) {
	if cs, ok := s.(*csvSource); ok {
		return cs.eachChunk(ctx, slots, fn)
	}
	return eachRowBatch(ctx, s, slots, fn)
}

// batchRows is how many rows a batch of a row-by-row source holds.
const batchRows = 1024

// eachRowBatch reads a source row by row on one goroutine into batches.
func eachRowBatch(ctx context.Context, s Source, slots []slot, fn batchFunc) (int64, error) {
	free, full := make(chan *colBatch, 3), make(chan *colBatch, 3)
	for range cap(free) {
		free <- &colBatch{}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(full)
		for {
			var b *colBatch
			select {
			case b = <-free:
			case <-done:
				return
			}
			fillRows(s, slots, b)
			select {
			case full <- b:
			case <-done:
				return
			}
			if b.err != nil {
				return
			}
		}
	})
	defer func() {
		close(done)
		wg.Wait()
	}()
	var rows int64
	for b := range full {
		if b.n > 0 {
			if err := fn(rows, b); err != nil {
				return rows, err
			}
			rows += int64(b.n)
		}
		switch {
		case errors.Is(b.err, io.EOF):
			return rows, nil
		case b.err != nil:
			return rows, b.err
		case ctx.Err() != nil:
			return rows, ctx.Err()
		}
		free <- b
	}
	return rows, nil
}

// fillRows reads up to batchRows rows of s into b.
func fillRows(s Source, slots []slot, b *colBatch) {
	b.reset(len(slots))
	for b.n < batchRows {
		fields, err := s.Next()
		if err != nil {
			b.err = err
			return
		}
		for k, sl := range slots {
			fl, c := fields[sl.col], &b.cols[k]
			switch {
			case fl.Kind == Missing && sl.text:
				c.kind = append(c.kind, Missing)
				c.text = append(c.text, nil)
				c.plain = false
			case fl.Kind == Missing:
				c.kind = append(c.kind, Missing)
				c.num = append(c.num, 0)
				c.plain = false
			case sl.text:
				c.kind = append(c.kind, Text)
				c.text = append(c.text, b.keep(textOf(fl)))
				c.plain = false
			case fl.Kind == Number:
				c.kind = append(c.kind, Number)
				c.num = append(c.num, fl.Num)
				if fl.Num-fl.Num != 0 { // NaN or ±Inf
					c.plain = false
				}
			default:
				// Text that may be a number: as strconv reads it, with no
				// spelling of "missing" (only CSV has those).
				v, err := strconv.ParseFloat(fl.Text, 64)
				kind := Number
				if err != nil {
					kind = Text
				}
				c.kind = append(c.kind, kind)
				c.num = append(c.num, v)
				c.slow = append(c.slow, slowCell{i: len(c.kind) - 1, text: b.keep(fl.Text)})
				c.plain = false
			}
		}
		b.n++
	}
}

// textOf is a field as a category.
func textOf(fl Field) string {
	if fl.Kind == Number {
		return strconv.FormatFloat(fl.Num, 'g', -1, 64)
	}
	return fl.Text
}
