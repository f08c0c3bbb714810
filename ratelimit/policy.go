package ratelimit

// The failure policy: what a decision is when Redis cannot make it.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Fallback is what a limiter decides when Redis cannot: Redis failed (a
// network error, a restart, a timeout, an error such as LOADING or OOM).
// A script's own error answer (ErrWrongType, say) is always returned: it
// means a bug or foreign data under the key, not an outage.
type Fallback int

const (
	// NoFallback returns the error and lets the caller decide. The
	// default. In a Decision, it means Redis decided.
	NoFallback Fallback = iota
	// FailOpen allows the request: availability over protection.
	FailOpen
	// FailClosed denies the request: protection over availability.
	FailClosed
)

func (f Fallback) String() string {
	switch f {
	case NoFallback:
		return "none"
	case FailOpen:
		return "fail-open"
	case FailClosed:
		return "fail-closed"
	}
	return "Fallback(?)"
}

// redisFailed reports whether err is Redis or the network failing, which
// a failure policy may decide over, rather than this layer refusing the
// call, the script answering an error, or the caller giving up (its own
// context ended).
func redisFailed(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, ErrTimeout):
		return true
	case callerGaveUp(ctx),
		errors.Is(err, ErrInvalidKey), errors.Is(err, ErrClock), errors.Is(err, ErrInvalidCost):
		return false
	}
	return !scriptAnswered(err)
}

// callerGaveUp reports whether the caller's context has ended, or reached
// its deadline (a client that heeds deadlines can fail a hair before the
// context's own timer marks it done).
func callerGaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func wrap(err error) error {
	if err == nil || errors.Is(err, ErrTimeout) || errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrClock) {
		return err
	}
	return fmt.Errorf("ratelimit: %w", err)
}

// withTimeout runs f, and when d > 0 returns ErrTimeout once d has passed,
// whether or not f has returned: a hung server cannot hold a decision past
// its timeout even if the client ignores context deadlines.
func withTimeout[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		return f(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type outcome struct {
		r   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := f(tctx)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		if o.err != nil && ctx.Err() == nil && tctx.Err() != nil {
			return o.r, fmt.Errorf("%w (%v): %v", ErrTimeout, d, o.err)
		}
		return o.r, o.err
	case <-tctx.Done():
		var zero T
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		return zero, fmt.Errorf("%w (%v)", ErrTimeout, d)
	}
}
