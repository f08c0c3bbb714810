package redis_rate

import (
	"context"
	"time"

	"github.com/redlimit/redlimit/bindings"
)

// The one place this package meets redlimit's scripts: a change in the
// generated bindings costs an edit here and nowhere else.

// redisPrefix is redis_rate's key layout: the state of key k is at
// rate:<k>.
const redisPrefix = "rate:"

// gcra runs gcra.lua for cost events on rate:<key>, on the server's clock.
// Cost 0 peeks (it answers for a cost of 1 and writes nothing).
func gcra(ctx context.Context, rdb rediser, key string, limit Limit, cost int) (bindings.GCRAResult, error) {
	return bindings.GCRA(ctx, rdb, redisPrefix+key, bindings.GCRAParams{
		Burst:    int64(limit.Burst),
		Rate:     int64(limit.Rate),
		Period:   limit.Period,
		Cost:     int64(cost),
		Deadline: deadline(ctx),
	})
}

// gcraAtMost takes what is left of rate:<key>, up to n, in one call of
// gcra_at_most.lua, which shares gcra.lua's state. That script takes
// n >= 1; n = 0 is gcra.lua's peek, which answers as a call of 1 would and
// counts nothing.
func gcraAtMost(ctx context.Context, rdb rediser, key string, limit Limit, n int) (bindings.GCRAAtMostResult, error) {
	if n == 0 {
		r, err := gcra(ctx, rdb, key, limit, 0)
		if err != nil {
			return bindings.GCRAAtMostResult{}, err
		}
		res := bindings.GCRAAtMostResult{Remaining: r.Remaining, ResetAfter: r.ResetAfter}
		if !r.Allowed {
			res.RetryAfter = r.RetryAfter
		}
		return res, nil
	}
	return bindings.GCRAAtMost(ctx, rdb, redisPrefix+key, bindings.GCRAAtMostParams{
		Burst:    int64(limit.Burst),
		Rate:     int64(limit.Rate),
		Period:   limit.Period,
		N:        int64(n),
		Deadline: deadline(ctx),
	})
}

// deadline is when ctx's caller stops waiting, sent with every call: a
// call Redis runs at or after it (go-redis sending it again after a read
// timeout, a server that stalled with it queued) answers EXPIRED and
// counts nothing. The zero time, without a deadline, sends none.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
