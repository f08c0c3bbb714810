package inflight

// The only file of this package that calls package bindings: concurrency.lua.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// reply is concurrency.lua's four integers.
type reply struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// leaseOpName is concurrency.lua's op.
type leaseOpName = bindings.ConcurrencyOp

const (
	opAcquire = bindings.ConcurrencyOpAcquire
	opRenew   = bindings.ConcurrencyOpRenew
	opRelease = bindings.ConcurrencyOpRelease
)

// leaseOp is one call of concurrency.lua.
func leaseOp(ctx context.Context, c redis.Scripter, key string, op leaseOpName, id string, limit int64, ttl time.Duration, now time.Time) (reply, error) {
	r, err := bindings.Concurrency(ctx, c, key, bindings.ConcurrencyParams{Op: op, Lease: id, Limit: limit, TTL: ttl, Now: now})
	return reply(r), call.ClockRefused(err)
}
