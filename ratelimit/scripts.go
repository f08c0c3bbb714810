package ratelimit

// This file and scripts_atomic.go (multi.lua and concurrency.lua) are the
// only ones that call package bindings: the one table that knows the six
// scripts of one limit, how a Limit maps onto each one's arguments, and
// which bounds (bounds.go) each one checks. When the generated bindings
// change shape, these files are what adapts.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// ErrWrongType matches, with errors.Is, the error of a call whose Redis key
// holds something other than the algorithm's own state (another type, or
// another algorithm's state under the same key). The scripts leave such a
// key alone. Give limiters with different algorithms different names.
var ErrWrongType = bindings.ErrWrongType

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
// that runs under ctx, and the bounds the script puts on a Limit beyond the
// common ones.
type script struct {
	run   func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error)
	queue func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error)
	check func(l Limit) *LimitError
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
	check func(Limit) *LimitError,
	params func(l Limit, cost int64, now, due time.Time) P,
) script {
	return script{
		run: func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error) {
			r, err := run(ctx, c, key, params(l, cost, now, deadline(ctx)))
			return reply(r), clockRefused(ctx, err)
		},
		queue: func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error) {
			p := queue(b, key, params(l, cost, now, deadline(ctx)))
			return func() (reply, error) {
				r, err := p.Result()
				return reply(r), clockRefused(ctx, err)
			}
		},
		check: check,
	}
}

// deadline is when ctx's caller stops waiting (a context deadline, or the
// limiter's timeout, which runs under one), sent with every call that
// writes: a call Redis runs at or after it answers EXPIRED and counts
// nothing, so a request the caller gave up on (its timeout, a failure
// policy that already answered, go-redis sending it again after a read
// timeout, a server that stalled with it queued) never counts. The zero
// time sends none. It is an instant on this process's clock, judged by
// Redis's TIME, so a skew between the two moves it: a clock s ahead of
// Redis's lets a call count up to s after its caller gave up, and one s
// behind refuses calls in the last s before their deadline, which
// clockRefused reports as ErrClock. Keep the clocks in step (NTP holds
// them within milliseconds), as a caller clock needs anyway.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// clockRefused marks the scripts' refusal of a caller clock more than 60 s
// from the server's TIME as ErrClock: only the server can tell, so New
// cannot refuse it, and no failure policy may hide a wrong clock. So is an
// EXPIRED answer to a caller still waiting (ctx, the call's own, neither
// done nor past its deadline on this clock): Redis's clock reads a later
// time than this process's. EXPIRED to a caller that gave up is ErrTimeout.
func clockRefused(ctx context.Context, err error) error {
	var se *bindings.ScriptError
	switch {
	case !errors.As(err, &se):
	case se.Code == "BADARG" && strings.HasPrefix(se.Message, "now must be 0"):
		return fmt.Errorf("%w: %w", ErrClock, err)
	case se.Code != "EXPIRED":
	case callerGaveUp(ctx):
		// An answer that came too late: what the timeout says, whether or
		// not the timer has fired yet.
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	default:
		return fmt.Errorf("%w: Redis ran the call past its deadline by its TIME while this process still waited: its clock is ahead of this one's: %w", ErrClock, err)
	}
	return err
}

// scriptAnswered reports whether err is the script's own answer (an error
// reply it declares, a reply of the wrong shape, an argument the bindings
// refused) rather than Redis or the network failing. A failure policy never
// hides such an error: it means a bug or a key that holds foreign data.
func scriptAnswered(err error) bool {
	var se *bindings.ScriptError
	var re *bindings.ReplyError
	var ae *bindings.ArgError
	return errors.As(err, &se) || errors.As(err, &re) || errors.As(err, &ae)
}

// call is one decision in a pipeline.
type call struct {
	alg   Algorithm
	key   string // the Redis key
	limit Limit
	cost  int64
	now   time.Time
}

// pipelined sends calls in one pipeline (bindings.Batch, which survives
// NOSCRIPT) when c can pipeline, and reports false when it cannot.
func pipelined(ctx context.Context, c redis.Scripter, calls []call) ([]reply, []error, bool) {
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

// Load loads every script into Redis's script cache (SCRIPT LOAD; on a
// *redis.ClusterClient, on every master). Decisions work without it, since
// a call answered NOSCRIPT is sent again in full, but loading first saves
// that round trip on each script's first use after a restart.
func Load(ctx context.Context, c redis.Scripter) error {
	return wrap(bindings.LoadAll(ctx, c))
}
