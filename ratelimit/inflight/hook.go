package inflight

import (
	"context"
	"time"
)

// An Event is what a hook (WithHook) learns of one Acquire, Renew or
// Release, or of a failed release dropped in the background (Op
// "release", Err ErrReleaseDropped, no Duration). An Acquire's
// Decision.Source says who decided, in ratelimit's words.
type Event struct {
	Name     string // the limiter's
	Key      string
	Op       string   // "acquire", "renew" or "release"
	Decision Decision // Acquire's
	Err      error
	Duration time.Duration
}

// WithHook calls h after every Acquire, Renew and Release, on the caller's
// goroutine, and for every failed release the limiter drops (see
// ErrReleaseDropped), for logs and metrics.
func WithHook(h func(ctx context.Context, e Event)) Option {
	return func(l *Limiter) error { l.hook = h; return nil }
}
