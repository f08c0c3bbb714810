package ratelimit

// This file and scripts_atomic.go (multi.lua) are the only files of package
// ratelimit that import package bindings (inflight/scripts.go calls
// concurrency.lua, preflight checks the Functions library, and
// internal/call reads bindings' error types): the one table that knows the
// six scripts of one limit, how a Limit maps onto each one's arguments,
// and which bounds (bounds.go) each one checks. When the generated
// bindings change shape, these files are what adapts.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// reply is the four integers every script answers.
type reply struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration // -1 ms when the cost exceeds the limit
	ResetAfter time.Duration
}

// result is the shape of every generated XResult, so each converts to reply.
type result interface {
	~struct {
		Allowed    bool
		Remaining  int64
		RetryAfter time.Duration
		ResetAfter time.Duration
	}
}

// script is one row of the table: a call, the same call queued in a batch
// that runs under ctx, and the bounds the script puts on a Limit beyond the common ones.
type script struct {
	run   func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error)
	queue func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error)
	check func(l Limit) *limitError
}

var scripts = [...]script{
	GCRA: bind(bindings.GCRA, (*bindings.Batch).GCRA, paced, func(l Limit, cost int64, now, due time.Time) bindings.GCRAParams {
		return bindings.GCRAParams{Burst: l.Burst, Rate: l.Rate, Period: l.Period, Cost: cost, Now: now, Deadline: due}
	}),
	TokenBucket: bind(bindings.TokenBucket, (*bindings.Batch).TokenBucket, smoothFill, func(l Limit, cost int64, now, due time.Time) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Refill: bindings.TokenBucketRefillSmooth, Cost: cost, Now: now, Deadline: due}
	}),
	TokenBucketInterval: bind(bindings.TokenBucket, (*bindings.Batch).TokenBucket, intervalFill, func(l Limit, cost int64, now, due time.Time) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Refill: bindings.TokenBucketRefillInterval, Cost: cost, Now: now, Deadline: due}
	}),
	LeakyBucket: bind(bindings.LeakyBucket, (*bindings.Batch).LeakyBucket, paced, func(l Limit, cost int64, now, due time.Time) bindings.LeakyBucketParams {
		return bindings.LeakyBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Cost: cost, Now: now, Deadline: due}
	}),
	FixedWindow: bind(bindings.FixedWindow, (*bindings.Batch).FixedWindow, window(1e9), func(l Limit, cost int64, now, due time.Time) bindings.FixedWindowParams {
		return bindings.FixedWindowParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
	}),
	SlidingWindowLog: bind(bindings.SlidingWindowLog, (*bindings.Batch).SlidingWindowLog, window(10000), func(l Limit, cost int64, now, due time.Time) bindings.SlidingWindowLogParams {
		return bindings.SlidingWindowLogParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
	}),
	SlidingWindowCounter: bind(bindings.SlidingWindowCounter, (*bindings.Batch).SlidingWindowCounter, window(1e9), func(l Limit, cost int64, now, due time.Time) bindings.SlidingWindowCounterParams {
		return bindings.SlidingWindowCounterParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
	}),
}

func bind[P any, R result](
	run func(context.Context, redis.Scripter, string, P) (R, error),
	queue func(*bindings.Batch, string, P) *bindings.Pending[R],
	check func(Limit) *limitError,
	params func(l Limit, cost int64, now, due time.Time) P,
) script {
	// Every call carries the instant its caller stops waiting
	// (call.Deadline): one Redis runs later counts nothing.
	return script{
		run: func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error) {
			r, err := run(ctx, c, key, params(l, cost, now, call.Deadline(ctx)))
			return reply(r), call.ClockRefused(ctx, err)
		},
		queue: func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error) {
			p := queue(b, key, params(l, cost, now, call.Deadline(ctx)))
			return func() (reply, error) {
				r, err := p.Result()
				return reply(r), call.ClockRefused(ctx, err)
			}
		},
		check: check,
	}
}

// scriptCall is one decision in a pipeline.
type scriptCall struct {
	alg   Algorithm
	key   string // the Redis key
	limit Limit
	cost  int64
	now   time.Time
}

// pipelined sends calls in one pipeline (bindings.Batch, which survives
// NOSCRIPT) when c can pipeline, and reports false when it cannot.
func pipelined(ctx context.Context, c redis.Scripter, calls []scriptCall) ([]reply, []error, bool) {
	pc, ok := c.(bindings.PipelineClient)
	if !ok {
		return nil, nil, false
	}
	b := bindings.NewBatch()
	results := make([]func() (reply, error), len(calls))
	for i, cl := range calls {
		results[i] = scripts[cl.alg].queue(ctx, b, cl.key, cl.limit, cl.cost, cl.now)
	}
	_ = b.Exec(ctx, pc) // each call reports its own error below
	replies := make([]reply, len(calls))
	errs := make([]error, len(calls))
	for i, res := range results {
		replies[i], errs[i] = res()
	}
	return replies, errs, true
}
