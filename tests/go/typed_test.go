package tiers

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// scripts are the generated bindings' scripts: the tiers send the embedded
// text, not a fresh read of lua/.
var scripts = map[string]*redis.Script{
	"token_bucket":           bindings.TokenBucketScript,
	"fixed_window":           bindings.FixedWindowScript,
	"sliding_window_log":     bindings.SlidingWindowLogScript,
	"sliding_window_counter": bindings.SlidingWindowCounterScript,
	"leaky_bucket":           bindings.LeakyBucketScript,
	"gcra":                   bindings.GCRAScript,
}

// rawArgs reads a step's ARGV back into Go values for the typed API; ok is
// false when an argument is not an integer, which the typed API cannot
// even express.
type rawArgs struct {
	vals []string
	ok   bool
}

func (a *rawArgs) int(i int) int64 {
	if i >= len(a.vals) {
		a.ok = false
		return 0
	}
	n, err := strconv.ParseInt(a.vals[i], 10, 64)
	a.ok = a.ok && err == nil
	return n
}

func (a *rawArgs) str(i int) string {
	if i >= len(a.vals) {
		a.ok = false
		return ""
	}
	return a.vals[i]
}

func (a *rawArgs) ms(i int) time.Duration { return time.Duration(a.int(i)) * time.Millisecond }
func (a *rawArgs) us(i int) time.Duration { return time.Duration(a.int(i)) * time.Microsecond }

// typedCall is one call through the generated typed API; the reply comes
// back as the script's four integers.
type typedCall func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error)

func reply(allowed bool, remaining int64, retry, reset time.Duration) []any {
	a := int64(0)
	if allowed {
		a = 1
	}
	return []any{a, remaining, retry.Milliseconds(), reset.Milliseconds()}
}

var typed = map[string]typedCall{
	"token_bucket": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.TokenBucketParams{Capacity: a.int(0), Rate: a.int(1), Period: a.ms(2), Refill: a.str(3), Cost: a.int(4), Now: a.us(5)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.TokenBucket(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
	"fixed_window": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.FixedWindowParams{Limit: a.int(0), Window: a.ms(1), Cost: a.int(2), Now: a.us(3)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.FixedWindow(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
	"sliding_window_log": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.SlidingWindowLogParams{Limit: a.int(0), Window: a.ms(1), Cost: a.int(2), Now: a.us(3)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.SlidingWindowLog(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
	"sliding_window_counter": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.SlidingWindowCounterParams{Limit: a.int(0), Window: a.ms(1), Cost: a.int(2), Now: a.us(3)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.SlidingWindowCounter(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
	"leaky_bucket": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.LeakyBucketParams{Capacity: a.int(0), Rate: a.int(1), Period: a.ms(2), Cost: a.int(3), Now: a.us(4)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.LeakyBucket(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
	"gcra": func(ctx context.Context, c redis.Scripter, key string, a *rawArgs) ([]any, error) {
		p := bindings.GCRAParams{Burst: a.int(0), Rate: a.int(1), Period: a.ms(2), Cost: a.int(3), Now: a.us(4)}
		if !a.ok {
			return nil, errNotTyped
		}
		r, err := bindings.GCRA(ctx, c, key, p)
		return reply(r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter), err
	},
}

var errNotTyped = errors.New("arguments the typed API cannot express")

// scriptErrorText is an error reply's text as the server sent it, also when
// the bindings turned it into a *bindings.ScriptError.
func scriptErrorText(err error) string {
	var se *bindings.ScriptError
	if errors.As(err, &se) {
		return se.Code + " " + se.Message
	}
	return err.Error()
}
