package forward

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 11, 12, 2, 47, 0, 0, time.UTC)
	f := func(v string, want time.Duration) {
		t.Helper()
		require.Equal(t, want, retryAfter(v, now), v)
	}
	f("", 0)
	f("0", 0)
	f("7", 7*time.Second)
	f(" 30 ", 30*time.Second)
	f("-3", 0)
	f("soon", 0)
	f(now.Add(90*time.Second).Format(http.TimeFormat), 90*time.Second)
	f(now.Add(-time.Minute).Format(http.TimeFormat), 0)
}

func TestGRPCErrorClasses(t *testing.T) {
	withRetryInfo := func(c codes.Code, d time.Duration) error {
		st, err := status.New(c, "busy").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		require.NoError(t, err)
		return st.Err()
	}
	f := func(err error, retryable bool, after time.Duration) {
		t.Helper()
		var ee *exportError
		require.ErrorAs(t, grpcError(err), &ee)
		require.Equal(t, retryable, ee.retryable, err.Error())
		require.Equal(t, after, ee.after, err.Error())
	}
	f(status.Error(codes.Unavailable, "down"), true, 0)
	f(status.Error(codes.DeadlineExceeded, "slow"), true, 0)
	f(status.Error(codes.Aborted, "x"), true, 0)
	f(status.Error(codes.ResourceExhausted, "too big"), false, 0)
	f(withRetryInfo(codes.ResourceExhausted, 3*time.Second), true, 3*time.Second)
	f(withRetryInfo(codes.Unavailable, 2*time.Second), true, 2*time.Second)
	f(status.Error(codes.InvalidArgument, "bad"), false, 0)
	f(status.Error(codes.Unauthenticated, "who"), false, 0)
	f(status.Error(codes.Internal, "oops"), false, 0)
	f(errors.New("not a status"), false, 0)
}

func TestQueueDropsOldest(t *testing.T) {
	q := newQueue(2)
	var dropped []int
	drop := func(b *batch) { dropped = append(dropped, b.n) }
	for i := 1; i <= 5; i++ {
		q.push(&batch{n: i}, drop)
	}
	require.Equal(t, []int{1, 2, 3}, dropped)
	require.Equal(t, 2, q.len())
	b, ok := q.pop(t.Context())
	require.True(t, ok)
	require.Equal(t, 4, b.n)
	q.close()
	q.close()
	q.push(&batch{n: 6}, drop)
	require.Equal(t, []int{1, 2, 3, 6}, dropped, "after close a push is dropped")
	var rest []int
	for b := range q.rest() {
		rest = append(rest, b.n)
	}
	require.Equal(t, []int{5}, rest)
	_, ok = q.pop(t.Context())
	require.False(t, ok)
}

func TestTruncate(t *testing.T) {
	require.Equal(t, "abc", truncate("abc", 5))
	require.Equal(t, "ab…", truncate("abcdef", 2))
	require.Equal(t, "a…", truncate("aéb", 2), "never inside a rune")
}

func TestLogLimiter(t *testing.T) {
	l := newLogLimiter(time.Minute)
	now := time.Date(2026, 11, 12, 2, 47, 0, 0, time.UTC)
	ok, held := l.allow("k", now)
	require.True(t, ok)
	require.Zero(t, held)
	for range 3 {
		ok, _ = l.allow("k", now.Add(time.Second))
		require.False(t, ok)
	}
	ok, _ = l.allow("other", now.Add(time.Second))
	require.True(t, ok)
	ok, held = l.allow("k", now.Add(time.Minute))
	require.True(t, ok)
	require.Equal(t, 3, held)
}
