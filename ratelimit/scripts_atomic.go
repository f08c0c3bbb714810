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
	nums := make([]int64, 0, 3*len(limits))
	for _, l := range limits {
		nums = append(nums, l.Burst, l.Rate, l.Period.Milliseconds())
	}
	r, err := bindings.Multi(ctx, c, keys, bindings.MultiParams{Cost: cost, Now: now, Deadline: call.Deadline(ctx), Limits: nums})
	if err != nil {
		return nil, call.ClockRefused(ctx, err)
	}
	if len(r.PerLimit) != 3*len(limits) {
		return nil, &bindings.ReplyError{Script: "multi.lua", Element: 3, Name: "per_limit",
			Want: fmt.Sprintf("%d numbers, three per limit", 3*len(limits)), Got: fmt.Sprintf("%d", len(r.PerLimit))}
	}
	out := make([]reply, len(limits))
	for i := range out {
		p := r.PerLimit[3*i : 3*i+3]
		out[i] = reply{Allowed: p[1] == 0, Remaining: p[0], RetryAfter: time.Duration(p[1]) * time.Millisecond, ResetAfter: time.Duration(p[2]) * time.Millisecond}
	}
	return out, nil
}
