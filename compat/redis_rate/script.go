package redis_rate

import (
	"context"
	"errors"
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
		Burst:  int64(limit.Burst),
		Rate:   int64(limit.Rate),
		Period: limit.Period,
		Cost:   int64(cost),
	})
}

// atMost is the reply of a take-up-to-n call.
type atMost struct {
	Taken      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// gcraAtMost takes what is left of rate:<key>, up to n, in one script call.
func gcraAtMost(ctx context.Context, rdb rediser, key string, limit Limit, n int) (atMost, error) {
	return atMost{}, errors.New("redis_rate: AllowAtMost waits for gcra.lua's take-up-to-n call")
}
