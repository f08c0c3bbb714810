package ratelimit

// This is the only file that calls package bindings: the one table that
// knows the six scripts, how a Limit maps onto each one's arguments, and the
// bounds each one checks. When the generated bindings change shape (a Now
// that is a time.Time, a named Refill type, bounds checked in Go), this file
// is what adapts.

import (
	"context"
	"errors"
	"math/bits"
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

// script is one row of the table: a call, the same call queued in a batch,
// and the bounds the script puts on a Limit beyond the common ones.
type script struct {
	run   func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error)
	queue func(b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error)
	check func(l Limit) *LimitError
}

var scripts = [...]script{
	GCRA: bind(bindings.GCRA, (*bindings.Batch).GCRA, paced, func(l Limit, cost int64, now time.Duration) bindings.GCRAParams {
		return bindings.GCRAParams{Burst: l.Burst, Rate: l.Rate, Period: l.Period, Cost: cost, Now: now}
	}),
	TokenBucket: bind(bindings.TokenBucket, (*bindings.Batch).TokenBucket, smoothFill, func(l Limit, cost int64, now time.Duration) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Refill: "smooth", Cost: cost, Now: now}
	}),
	TokenBucketInterval: bind(bindings.TokenBucket, (*bindings.Batch).TokenBucket, intervalFill, func(l Limit, cost int64, now time.Duration) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Refill: "interval", Cost: cost, Now: now}
	}),
	LeakyBucket: bind(bindings.LeakyBucket, (*bindings.Batch).LeakyBucket, paced, func(l Limit, cost int64, now time.Duration) bindings.LeakyBucketParams {
		return bindings.LeakyBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Cost: cost, Now: now}
	}),
	FixedWindow: bind(bindings.FixedWindow, (*bindings.Batch).FixedWindow, window(1e9), func(l Limit, cost int64, now time.Duration) bindings.FixedWindowParams {
		return bindings.FixedWindowParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now}
	}),
	SlidingWindowLog: bind(bindings.SlidingWindowLog, (*bindings.Batch).SlidingWindowLog, window(10000), func(l Limit, cost int64, now time.Duration) bindings.SlidingWindowLogParams {
		return bindings.SlidingWindowLogParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now}
	}),
	SlidingWindowCounter: bind(bindings.SlidingWindowCounter, (*bindings.Batch).SlidingWindowCounter, window(1e9), func(l Limit, cost int64, now time.Duration) bindings.SlidingWindowCounterParams {
		return bindings.SlidingWindowCounterParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now}
	}),
}

func bind[P any, R result](
	run func(context.Context, redis.Scripter, string, P) (R, error),
	queue func(*bindings.Batch, string, P) *bindings.Pending[R],
	check func(Limit) *LimitError,
	params func(l Limit, cost int64, now time.Duration) P,
) script {
	return script{
		run: func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error) {
			r, err := run(ctx, c, key, params(l, cost, scriptClock(now)))
			return reply(r), err
		},
		queue: func(b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error) {
			p := queue(b, key, params(l, cost, scriptClock(now)))
			return func() (reply, error) {
				r, err := p.Result()
				return reply(r), err
			}
		},
		check: check,
	}
}

// scriptClock is the one place a caller clock becomes the scripts' now
// argument: µs since the epoch, 0 for the server's TIME.
func scriptClock(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Duration(t.UnixMicro()) * time.Microsecond
}

// The scripts' own bounds.
const (
	maxCount   = 1e9            // rate, burst, capacity, limit and cost
	maxPeriod  = 1e11           // ms
	maxSpan    = 1e15           // µs a full bucket or TAT may reach
	maxClockUs = int64(1) << 52 // the caller clock, µs since the epoch
)

// checkLimit refuses what the algorithm's script would answer BADARG.
func checkLimit(a Algorithm, l Limit) error {
	fail := func(field, reason string) error {
		return &LimitError{Algorithm: a, Limit: l, Field: field, Reason: reason}
	}
	switch {
	case l.Rate < 1 || l.Rate > maxCount:
		return fail("Rate", "must be from 1 to 1e9")
	case l.Burst < 1 || l.Burst > maxCount:
		return fail("Burst", "must be from 1 to 1e9 (PerSecond and the like set it to the rate)")
	case l.Period < time.Millisecond || l.Period > maxPeriod*time.Millisecond:
		return fail("Period", "must be from 1ms to 1e11 ms (3.17 years)")
	case l.Period%time.Millisecond != 0:
		return fail("Period", "must be a whole number of milliseconds")
	}
	if e := scripts[a].check(l); e != nil {
		e.Algorithm, e.Limit = a, l
		return e
	}
	return nil
}

// paced is GCRA's and the leaky bucket's bound: one unit lasts period/rate
// rounded up to a whole µs, and a full burst of units stays within 1e15 µs.
func paced(l Limit) *LimitError {
	periodUs := l.Period.Microseconds()
	if l.Rate > periodUs {
		return &LimitError{Field: "Rate", Reason: "must be at most one per µs of Period (use TokenBucket for more)"}
	}
	unit := (periodUs + l.Rate - 1) / l.Rate
	if !mulAtMost(uint64(l.Burst), uint64(unit), maxSpan, 1) {
		return &LimitError{Reason: "Burst × Period / Rate must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// smoothFill bounds the time a token bucket takes to fill: Burst×Period/Rate.
func smoothFill(l Limit) *LimitError {
	if !mulAtMost(uint64(l.Burst), uint64(l.Period.Microseconds()), maxSpan, uint64(l.Rate)) {
		return &LimitError{Reason: "Burst × Period / Rate must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// intervalFill bounds the same for whole periods: ⌈Burst/Rate⌉×Period.
func intervalFill(l Limit) *LimitError {
	steps := (l.Burst + l.Rate - 1) / l.Rate
	if !mulAtMost(uint64(steps), uint64(l.Period.Microseconds()), maxSpan, 1) {
		return &LimitError{Reason: "⌈Burst / Rate⌉ × Period must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// window is the window algorithms' check: they admit Rate per window, so a
// Burst other than Rate means nothing, and maxRate caps the log's size.
func window(maxRate int64) func(Limit) *LimitError {
	return func(l Limit) *LimitError {
		if l.Burst != l.Rate {
			return &LimitError{Field: "Burst", Reason: "must equal Rate: a window algorithm admits Rate per Period, all at once if they come at once"}
		}
		if l.Rate > maxRate {
			return &LimitError{Field: "Rate", Reason: "must be at most 10000 for the sliding log, which keeps one entry per request (use SlidingWindowCounter)"}
		}
		return nil
	}
}

// mulAtMost reports a×b ≤ c×d without overflow.
func mulAtMost(a, b, c, d uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return h1 < h2 || h1 == h2 && l1 <= l2
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
		results[i] = scripts[cl.alg].queue(b, cl.key, cl.limit, cl.cost, cl.now)
	}
	_ = b.Exec(ctx, execErrors{pc}) // each call reports its own error below
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

// execErrors works around Batch.Exec dropping the pipeline's own error:
// when go-redis cannot send a pipeline at all (no connection, a context
// that ended while waiting for one), it returns the error from Exec but
// sets it on no command, so each call would report an empty reply instead
// of the outage. This gives such commands the pipeline's error, so that
// failure policies see an outage. (To be fixed in luagen's Batch.Exec.)
type execErrors struct{ bindings.PipelineClient }

func (c execErrors) Pipeline() redis.Pipeliner { return execErrorsPipe{c.PipelineClient.Pipeline()} }

type execErrorsPipe struct{ redis.Pipeliner }

func (p execErrorsPipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	cmds, err := p.Pipeliner.Exec(ctx)
	if err != nil {
		for _, cmd := range cmds {
			if c, ok := cmd.(*redis.Cmd); ok && c.Err() == nil && c.Val() == nil {
				c.SetErr(err)
			}
		}
	}
	return cmds, err
}
