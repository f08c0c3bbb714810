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

// gcra runs gcra.lua for one request of cost events on rate:<key>, on
// the server's clock: take all for AllowN, at_most (what is left, up to
// cost) for AllowAtMost. Cost 0 peeks: it answers for a cost of 1 and
// counts nothing.
func gcra(ctx context.Context, rdb rediser, key string, limit Limit, cost int, take bindings.GCRATake) (bindings.GCRADecision, error) {
	r, err := bindings.GCRA(ctx, rdb, []string{redisPrefix + key}, bindings.GCRAParams{
		Burst:    int64(limit.Burst),
		Rate:     int64(limit.Rate),
		Period:   limit.Period,
		Take:     take,
		Requests: []bindings.GCRARequest{{Cost: int64(cost), Deadline: deadline(ctx)}},
	})
	switch {
	case err != nil:
		return bindings.GCRADecision{}, err
	case r.Decisions[0].Allowed == bindings.GCRADecisionAllowedExpired:
		return bindings.GCRADecision{}, &bindings.ScriptError{Script: "gcra.lua", Code: "EXPIRED",
			Message: "Redis ran the call at or after its deadline; nothing changed"}
	}
	return r.Decisions[0], nil
}

// deadline is when ctx's caller stops waiting, sent with every call: a
// call Redis runs at or after it (go-redis sending it again after a read
// timeout, a server that stalled with it queued) answers expired and
// counts nothing. The zero time, without a deadline, sends none.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
