package ratelimit

// The calls of the two scripts that are not one limit on one key, multi.lua
// and concurrency.lua; scripts.go has the six others. These two files are
// the only ones that call package bindings.

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// runMulti checks limits on keys (one each, in order) with multi.lua and
// returns one reply per limit: Allowed is whether that limit had room (the
// request passed only when every one had).
func runMulti(ctx context.Context, c redis.Scripter, keys []string, limits []Limit, cost int64, now time.Time) ([]reply, error) {
	nums := make([]int64, 0, 3*len(limits))
	for _, l := range limits {
		nums = append(nums, l.Burst, l.Rate, l.Period.Milliseconds())
	}
	r, err := bindings.Multi(ctx, c, keys, bindings.MultiParams{Cost: cost, Now: now, Deadline: deadline(ctx), Limits: nums})
	if err != nil {
		return nil, clockRefused(ctx, err)
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

// leaseOpName is concurrency.lua's op.
type leaseOpName = bindings.ConcurrencyOp

// leaseOp is one call of concurrency.lua. An acquire or a renew carries
// its context's deadline (scripts.go), so one that Redis runs after its
// caller gave up takes or extends nothing; a release carries none: giving
// a slot back late is never wrong, and the release that undoes a failed
// acquire (forget) must work whenever it runs.
func leaseOp(ctx context.Context, c redis.Scripter, key string, op leaseOpName, id string, limit int64, ttl time.Duration, now time.Time) (reply, error) {
	p := bindings.ConcurrencyParams{Op: op, Lease: id, Limit: limit, TTL: ttl, Now: now}
	if op != opRelease {
		p.Deadline = deadline(ctx)
	}
	r, err := bindings.Concurrency(ctx, c, key, p)
	return reply(r), clockRefused(ctx, err)
}

const (
	opAcquire = bindings.ConcurrencyOpAcquire
	opRenew   = bindings.ConcurrencyOpRenew
	opRelease = bindings.ConcurrencyOpRelease
)
