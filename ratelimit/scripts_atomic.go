package ratelimit

// The call of multi.lua, several limits on one key; scripts.go has the six
// scripts of one limit, and inflight/scripts.go concurrency.lua. These are
// the only files that call package bindings.

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// runMulti checks limits on keys (one each, in order) with multi.lua and
// returns one reply per limit: Allowed is whether that limit had room (the
// request passed only when every one had).
func runMulti(ctx context.Context, c redis.Scripter, keys []string, limits []Limit, cost int64, now time.Time) ([]reply, error) {
	ls := make([]bindings.MultiLimit, len(limits))
	for i, l := range limits {
		ls[i] = bindings.MultiLimit{Burst: l.Burst, Rate: l.Rate, Period: l.Period}
	}
	r, err := bindings.Multi(ctx, c, keys, bindings.MultiParams{Cost: cost, Now: now, Deadline: call.Deadline(ctx), Limits: ls})
	if err != nil {
		return nil, call.ClockRefused(ctx, err)
	}
	if len(r.PerLimit) != len(limits) {
		return nil, &bindings.ReplyError{Script: "multi.lua", Element: 3, Name: "per_limit",
			Want: fmt.Sprintf("%d records, one per limit", len(limits)), Got: fmt.Sprintf("%d", len(r.PerLimit))}
	}
	out := make([]reply, len(limits))
	for i, p := range r.PerLimit {
		out[i] = reply{Allowed: p.RetryAfter == 0, Remaining: p.Remaining, RetryAfter: p.RetryAfter, ResetAfter: p.ResetAfter}
	}
	return out, nil
}
