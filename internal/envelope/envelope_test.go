package envelope

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteData(rec, map[string]int{"n": 1})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.JSONEq(t, `{"status":"success","data":{"n":1}}`, rec.Body.String())

	rec = httptest.NewRecorder()
	WriteError(rec, http.StatusBadRequest, "bad_data", errors.New("limit=x: want a number"))
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.JSONEq(t, `{"status":"error","errorType":"bad_data","error":"limit=x: want a number"}`, rec.Body.String())

	rec = httptest.NewRecorder()
	WriteData(rec, func() {}) // not JSON
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Contains(t, rec.Body.String(), "encode response")
}

func TestParse(t *testing.T) {
	tm, err := ParseTime("end", "1700000000.5")
	require.NoError(t, err)
	require.Equal(t, time.Unix(1700000000, 5e8).UTC(), tm)
	tm, err = ParseTime("end", "2026-11-12T02:47:00Z")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 12, 2, 47, 0, 0, time.UTC), tm)
	tm, err = ParseTime("end", "")
	require.NoError(t, err)
	require.True(t, tm.IsZero())
	_, err = ParseTime("end", "yesterday")
	require.EqualError(t, err, `end="yesterday": want RFC 3339 or Unix seconds`)
	_, err = ParseTime("end", "NaN")
	require.Error(t, err)

	for in, want := range map[string]time.Duration{"": 0, "250ms": 250 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "1d": 24 * time.Hour} {
		d, err := ParseDuration("window", in)
		require.NoError(t, err, in)
		require.Equal(t, want, d, in)
	}
	_, err = ParseDuration("window", "-1s")
	require.Error(t, err)
	_, err = ParseDuration("window", "soon")
	require.EqualError(t, err, `window="soon": want a duration such as 250ms, 1.5s or 2m`)
}
