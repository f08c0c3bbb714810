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

// leaseOp is one call of concurrency.lua. Every op carries its context's
// deadline (call.Deadline), a release too, so one that Redis runs after its
// caller gave up takes, extends or ends nothing: the send stage may carry
// a release to Redis after its caller was told it failed, perhaps that it
// was dropped. The background releases (releaseMany's pipeline) carry
// none: giving a slot back late is never wrong there, and the release that
// undoes a failed acquire (forget) must work whenever it runs.
func leaseOp(ctx context.Context, c redis.Scripter, key string, op leaseOpName, id string, limit int64, ttl time.Duration, now time.Time) (reply, error) {
	p := bindings.ConcurrencyParams{Op: op, Lease: id, Limit: limit, TTL: ttl, Now: now, Deadline: call.Deadline(ctx)}
	r, err := bindings.Concurrency(ctx, c, key, p)
	return reply(r), call.ClockRefused(ctx, err)
}

// leaseCall is one release in releaseMany.
type leaseCall struct{ key, id string }

// releaseMany releases each lease of ops in one pipeline (a bindings.Batch,
// which survives NOSCRIPT) when c can pipeline, one call at a time
// otherwise, and returns each one's error.
func releaseMany(ctx context.Context, c redis.Scripter, ops []leaseCall, limit int64, ttl time.Duration, now time.Time) []error {
	errs := make([]error, len(ops))
	pc, ok := c.(bindings.PipelineClient)
	if !ok {
		for i, op := range ops {
			_, errs[i] = leaseOp(ctx, c, op.key, opRelease, op.id, limit, ttl, now)
		}
		return errs
	}
	b := bindings.NewBatch()
	results := make([]*bindings.Pending[bindings.ConcurrencyResult], len(ops))
	for i, op := range ops {
		results[i] = b.Concurrency(op.key, bindings.ConcurrencyParams{Op: opRelease, Lease: op.id, Limit: limit, TTL: ttl, Now: now})
	}
	_ = b.Exec(ctx, pc) // each call reports its own error
	for i, r := range results {
		_, errs[i] = r.Result()
	}
	return errs
}
