package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/prometheus/prometheus/model/labels"
)

// matrixAnswer is a range selector's answer, decoded as it streams: the
// envelope of the Prometheus API and its matrix.
type matrixAnswer struct {
	status, errorType, errMsg string
	warnings                  []string
	resultType                string
	series                    []cachedSeries
	// histograms names a series that had native histogram samples, which
	// are not read yet.
	histograms string
}

// decodeMatrix decodes the Prometheus API answer raw of a range selector,
// keeping each series' samples in [from, to]; on error, what was read
// before it (the status, first in Prometheus's answers). encoding/json spent 60 % of
// an attached cycle on it (a nested Unmarshal per sample pair); this reads
// the tokens once. Any other field is skipped, as encoding/json ignores it.
func decodeMatrix(raw []byte, from, to int64) (*matrixAnswer, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	a := &matrixAnswer{}
	err := readObject(dec, func(key string) error {
		switch key {
		case "status":
			return readString(dec, &a.status)
		case "errorType":
			return readString(dec, &a.errorType)
		case "error":
			return readString(dec, &a.errMsg)
		case "warnings":
			return readArray(dec, func() error {
				var w string
				if err := readString(dec, &w); err != nil {
					return err
				}
				a.warnings = append(a.warnings, w)
				return nil
			})
		case "data":
			return a.readData(dec, from, to)
		}
		return dec.SkipValue()
	})
	if err != nil {
		return a, err
	}
	if _, err := dec.ReadToken(); err == nil {
		return a, errors.New("more than one JSON value")
	}
	return a, nil
}

func (a *matrixAnswer) readData(dec *jsontext.Decoder, from, to int64) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	return readObject(dec, func(key string) error {
		switch key {
		case "resultType":
			return readString(dec, &a.resultType)
		case "result":
			if dec.PeekKind() == 'n' {
				_, err := dec.ReadToken()
				return err
			}
			return readArray(dec, func() error { return a.readSeries(dec, from, to) })
		}
		return dec.SkipValue()
	})
}

func (a *matrixAnswer) readSeries(dec *jsontext.Decoder, from, to int64) error {
	var (
		lb  labels.ScratchBuilder
		pts fsamples
	)
	histograms := false
	err := readObject(dec, func(key string) error {
		switch key {
		case "metric":
			return readObject(dec, func(name string) error {
				var v string
				if err := readString(dec, &v); err != nil {
					return err
				}
				lb.Add(name, v)
				return nil
			})
		case "values":
			if dec.PeekKind() == 'n' {
				_, err := dec.ReadToken()
				return err
			}
			return readArray(dec, func() error {
				pair, err := dec.ReadValue()
				if err != nil {
					return err
				}
				t, f, err := parsePair(pair)
				if err != nil {
					return err
				}
				if t >= from && t <= to {
					pts = append(pts, fsample{t: t, f: f})
				}
				return nil
			})
		case "histograms":
			histograms = dec.PeekKind() == '['
		case "value", "histogram":
			return errors.New("a range selector answered with an instant vector")
		}
		return dec.SkipValue()
	})
	if err != nil {
		return err
	}
	// jsontext refuses a name twice in an object: no label is doubled.
	lb.Sort()
	lset := lb.Labels()
	if histograms && a.histograms == "" {
		a.histograms = lset.String()
	}
	if len(pts) > 0 {
		a.series = append(a.series, cachedSeries{lset: lset, pts: pts})
	}
	return nil
}

// parsePair reads a sample pair, [1435781451.781,"1"]: the time in
// seconds (to the millisecond) and the value as a string.
func parsePair(pair jsontext.Value) (int64, float64, error) {
	b := bytes.TrimSpace(pair)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return 0, 0, fmt.Errorf("sample pair %s: not [time, \"value\"]", pair)
	}
	ts, val, ok := bytes.Cut(b[1:len(b)-1], []byte{','})
	ts, val = bytes.TrimSpace(ts), bytes.TrimSpace(val)
	if !ok || len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' || bytes.IndexByte(val[1:len(val)-1], '"') >= 0 {
		return 0, 0, fmt.Errorf("sample pair %s: not [time, \"value\"]", pair)
	}
	t, err := parseMillis(ts)
	if err != nil {
		return 0, 0, fmt.Errorf("sample pair %s: %w", pair, err)
	}
	f, err := strconv.ParseFloat(string(val[1:len(val)-1]), 64)
	if err != nil {
		return 0, 0, fmt.Errorf("sample pair %s: value: %w", pair, err)
	}
	return t, f, nil
}

// parseMillis reads a time in seconds as the API writes it (1435781451.781)
// into milliseconds without a float's rounding, as model.Time does; other
// number forms (an exponent) go through a float.
func parseMillis(b []byte) (int64, error) {
	whole, frac, _ := bytes.Cut(b, []byte{'.'})
	if plain(whole) && len(frac) <= 3 && (len(frac) == 0 || digits(frac)) {
		s, err := strconv.ParseInt(string(whole), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("time: %w", err)
		}
		ms := int64(0)
		for i := range 3 {
			ms *= 10
			if i < len(frac) {
				ms += int64(frac[i] - '0')
			}
		}
		if s < 0 || (len(whole) > 0 && whole[0] == '-') {
			ms = -ms
		}
		if s > math.MaxInt64/1000-1 || s < math.MinInt64/1000+1 {
			return 0, fmt.Errorf("time %s out of range", b)
		}
		return s*1000 + ms, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1000 {
		return 0, fmt.Errorf("time %s: not a number of seconds", b)
	}
	return int64(math.Round(f * 1000)), nil
}

// plain is an integer with an optional minus sign: no exponent.
func plain(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	return len(b) > 0 && digits(b)
}

func digits(b []byte) bool {
	return !slices.ContainsFunc(b, func(c byte) bool { return c < '0' || c > '9' })
}

// readObject reads an object, calling field with each key; field must
// read (or skip) the key's value.
func readObject(dec *jsontext.Decoder, field func(key string) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("want an object, got %s", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := field(k.String()); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// readArray reads an array, calling elem to read each element.
func readArray(dec *jsontext.Decoder, elem func() error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '[' {
		return fmt.Errorf("want an array, got %s", tok.Kind())
	}
	for dec.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

func readString(dec *jsontext.Decoder, out *string) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		*out = tok.String()
	case 'n':
		*out = ""
	default:
		return fmt.Errorf("want a string, got %s", tok.Kind())
	}
	return nil
}
