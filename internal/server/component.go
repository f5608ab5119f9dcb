package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// runner runs one function in the background from Start until Shutdown,
// on a context of its own (the Collector's advice: the context given to
// Start is for starting only). An error that ends the function before
// Shutdown is reported to fatal.
type runner struct {
	name  string
	run   func(ctx context.Context) error
	fatal func(error)

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // what run returned, once done is closed
	stopped bool
	stopErr error
}

var _ component.Component = (*runner)(nil)

func newRunner(name string, run func(ctx context.Context) error, fatal func(error)) *runner {
	return &runner{name: name, run: run, fatal: fatal}
}

// Start runs the function in a goroutine and returns at once. A runner
// starts once.
func (r *runner) Start(context.Context, component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped:
		return fmt.Errorf("start %s: already shut down", r.name)
	case r.cancel != nil:
		return fmt.Errorf("start %s: already started", r.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		err := r.run(ctx)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = nil
		}
		r.err = err
		if err != nil && ctx.Err() == nil && r.fatal != nil {
			r.fatal(fmt.Errorf("%s: %w", r.name, err))
		}
	}()
	return nil
}

// Shutdown cancels the function's context and waits for it to return, or
// for ctx to end. It is safe without Start and returns the same result
// every time.
func (r *runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return r.stopErr
	}
	r.stopped = true
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			r.stopErr = fmt.Errorf("%s: %w", r.name, r.err)
		}
	case <-ctx.Done():
		r.stopErr = fmt.Errorf("%s did not stop in time: %w", r.name, ctx.Err())
	}
	return r.stopErr
}

// closer is a component whose Start has nothing left to do (what it
// closes was opened while the server started) and whose Shutdown closes
// it once.
type closer struct {
	once  sync.Once
	close func(context.Context) error
	err   error
}

var _ component.Component = (*closer)(nil)

func newCloser(close func(context.Context) error) *closer { return &closer{close: close} }

func (*closer) Start(context.Context, component.Host) error { return nil }

func (c *closer) Shutdown(ctx context.Context) error {
	c.once.Do(func() { c.err = c.close(ctx) })
	return c.err
}

// noExtensions is the host the server gives its components: Vigil has no
// Collector extensions.
type noExtensions struct{}

func (noExtensions) GetExtensions() map[component.ID]component.Component { return nil }

// Host is a host with no extensions, for callers that start the server
// on its own rather than inside a Collector.
var Host component.Host = noExtensions{}
