package drift

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"
)

// A CSV source is read in chunks of whole records: one goroutine reads the
// input and cuts it at the last record boundary of each chunk, a parser per
// core splits the records of a chunk and parses the slots' fields into a
// batch, and the caller takes the batches in input order. Chunks go round
// a fixed pool, so memory stays a few chunks whatever the file's size.

// chunk is a run of whole records and the batch parsed from them.
type chunk struct {
	data  []byte
	final bool  // the input's last chunk
	ioErr error // reading stopped with this error after data
	lines int   // lines of data, as encoding/csv counts them
	batch colBatch
	ready chan struct{} // the batch is parsed
}

// eachChunk is eachBatch of a CSV source.
func (s *csvSource) eachChunk(ctx context.Context, slots []slot, fn batchFunc) (int64, error) {
	workers := max(1, runtime.GOMAXPROCS(0))
	pool := workers + 2
	free := make(chan *chunk, pool)
	work, order := make(chan *chunk, pool), make(chan *chunk, pool)
	for range pool {
		free <- &chunk{ready: make(chan struct{}, 1)}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(order)
		defer close(work)
		for {
			var c *chunk
			select {
			case c = <-free:
			case <-done:
				return
			}
			s.readChunk(c)
			// Both channels hold the whole pool: neither blocks.
			work <- c
			order <- c
			if c.final || c.ioErr != nil {
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			p := newChunkParser(len(s.cols), slots)
			for c := range work {
				p.parse(c)
				c.ready <- struct{}{}
			}
		})
	}
	defer func() {
		close(done)
		wg.Wait()
	}()
	var rows, hint int64
	line := s.line
	for c := range order {
		<-c.ready
		b := &c.batch
		if hint == 0 && b.n > 0 && s.size > 0 && len(c.data) > 0 {
			// The rows of the file, if its rows are like the first chunk's.
			hint = 1 + int64(float64(s.size)*float64(b.n)/float64(len(c.data)))
		}
		b.hint = hint
		if b.n > 0 {
			if err := fn(rows, b); err != nil {
				return rows, err
			}
			rows += int64(b.n)
		}
		switch {
		case b.err != nil:
			var pe *csv.ParseError
			if errors.As(b.err, &pe) {
				pe.StartLine += line
				pe.Line += line
			}
			return rows, fmt.Errorf("%w: %w", ErrInput, b.err)
		case c.ioErr != nil:
			return rows, fmt.Errorf("%w: %w", ErrInput, c.ioErr)
		case c.final:
			return rows, nil
		case ctx.Err() != nil:
			return rows, ctx.Err()
		}
		line += c.lines
		free <- c
	}
	return rows, nil
}

// readChunk fills c with the next whole records of the input: a buffer's
// worth, more when one record is longer.
func (s *csvSource) readChunk(c *chunk) {
	c.final, c.ioErr = false, nil
	if s.off > 0 {
		s.end = copy(s.buf, s.buf[s.off:s.end])
		s.off = 0
	}
	for {
		for !s.eof && s.end < len(s.buf) {
			if err := s.fill(); err != nil {
				c.ioErr = err
				break
			}
		}
		data := s.buf[s.off:s.end]
		n := len(data)
		if !s.eof && c.ioErr == nil {
			n = lastBoundary(data)
			if n == 0 {
				// One record longer than the buffer: read on.
				if err := s.fill(); err != nil {
					c.ioErr = err
				}
				if c.ioErr == nil {
					continue
				}
			}
		}
		c.data = append(c.data[:0], data[:n]...)
		s.off += n
		c.final = s.eof && s.off == s.end
		return
	}
}

// chunkParser splits a chunk's records into a batch of the slots' cells.
type chunkParser struct {
	ncol   int
	slots  []slot
	slotOf []int // each column's slot, -1 for none
	q      quotedReader
}

func newChunkParser(ncol int, slots []slot) *chunkParser {
	p := &chunkParser{ncol: ncol, slots: slots, slotOf: make([]int, ncol)}
	for i := range p.slotOf {
		p.slotOf[i] = -1
	}
	for k, sl := range slots {
		p.slotOf[sl.col] = k
	}
	return p
}

// parse parses c.data into c.batch, stopping at the first bad record.
// Errors carry lines counted from the chunk's start.
func (p *chunkParser) parse(c *chunk) {
	b := &c.batch
	b.reset(len(p.slots))
	b.reserve(bytes.Count(c.data, []byte{'\n'})+1, p.slots)
	p.q.r = nil
	data, line := c.data, 0
	for {
		rec, more := nextRecord(data, c.final)
		if more {
			// Chunks end at record boundaries.
			rec, _ = nextRecord(data, true)
		}
		data = data[rec.size:]
		first := line + rec.skipped
		line += rec.lines
		if rec.text == nil {
			break
		}
		if rec.quoted {
			strs, err := p.q.read(rec.text, p.ncol, first)
			if err != nil {
				b.err = err
				break
			}
			for k, sl := range p.slots {
				p.add(b, k, sl, b.keep(strs[sl.col]))
			}
		} else {
			if !p.plain(rec.text, b) {
				b.err = fieldCountError(first + 1)
				break
			}
		}
		b.n++
	}
	c.lines = line
}

// plain splits a record without quotes and parses its slots' fields into
// b, a number that ends at its comma in the same pass; false when the
// record has not ncol fields (b then holds some of its cells beyond b.n).
func (p *chunkParser) plain(line []byte, b *colBatch) bool {
	col := 0
	for ; ; col++ {
		k := -1
		if col < p.ncol {
			k = p.slotOf[col]
		}
		if k >= 0 && !p.slots[k].text {
			if v, n, ok := decimalPrefix(line); ok && (n == len(line) || line[n] == ',') {
				c := &b.cols[k]
				c.kind = append(c.kind, Number)
				c.num = append(c.num, v)
				line = line[n:]
				if len(line) == 0 {
					break
				}
				line = line[1:]
				continue
			}
		}
		if len(line) > 0 && (line[0] <= ' ' || line[0] >= utf8.RuneSelf) {
			line = trimLeadingSpace(line)
		}
		i := bytes.IndexByte(line, ',')
		f := line
		if i >= 0 {
			f = line[:i:i]
		}
		if k >= 0 {
			p.add(b, k, p.slots[k], f)
		}
		if i < 0 {
			break
		}
		line = line[i+1:]
	}
	return col+1 == p.ncol
}

func (p *chunkParser) add(b *colBatch, k int, sl slot, f []byte) {
	if sl.text {
		b.cols[k].addText(f)
		return
	}
	b.cols[k].addNumber(f)
}
