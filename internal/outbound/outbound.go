// Package outbound measures an outbound limit's calls for the tests and
// benchmarks that check the recipe "at most N calls in any second": when
// the command that admitted a call was sent, and how many calls fell in
// the worst second.
package outbound

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

type sentKey struct{}

// WithSent returns ctx carrying at: a client with SentHook writes into it
// the instant it last sent a command for a call under ctx (the decision
// that command carries ran after that instant).
func WithSent(ctx context.Context, at *time.Time) context.Context {
	return context.WithValue(ctx, sentKey{}, at)
}

// SentHook is the go-redis hook that records those instants.
type SentHook struct{}

func (SentHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (SentHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if p, ok := ctx.Value(sentKey{}).(*time.Time); ok {
			*p = time.Now()
		}
		return next(ctx, cmd)
	}
}

func (SentHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// WorstSecond returns the most instants in any half-open second, and where
// that second starts.
func WorstSecond(at []time.Time) (int, time.Time) {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	worst, from, j := 0, time.Time{}, 0
	for i := range at {
		for at[i].Sub(at[j]) >= time.Second {
			j++
		}
		if i-j+1 > worst {
			worst, from = i-j+1, at[j]
		}
	}
	return worst, from
}

// Sustained is the rate the instants keep once the first n are spent: n
// over the mean time from an instant to the n-th after it.
func Sustained(at []time.Time, n int) float64 {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	var sum time.Duration
	k := 0
	for i := n; i+n < len(at); i++ {
		sum += at[i+n].Sub(at[i])
		k++
	}
	if k == 0 || sum <= 0 {
		return 0
	}
	return float64(n) / (sum / time.Duration(k)).Seconds()
}
