package ratelimit

// This file and scripts_atomic.go (multi.lua) are the only files of package
// ratelimit that import package bindings (inflight/scripts.go calls
// concurrency.lua, preflight checks the Functions library, and
// internal/call reads bindings' error types): the one table that knows the
// six scripts of one limit (two of which decide batches), how a Limit maps
// onto each one's arguments, and which bounds (bounds.go) each one checks.
// When the generated bindings change shape, these files are what adapts.

import (
	"context"
	"fmt"
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
// that runs under ctx, and the bounds the script puts on a Limit beyond the
// common ones. The scripts that decide a batch of requests in one call
// (GCRA, the token bucket) have batch too, and their run is a batch of one.
type script struct {
	run   func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error)
	queue func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error)
	batch func(ctx context.Context, c redis.Scripter, key string, l Limit, now time.Time, reqs []request) ([]outcome, error)
	check func(l Limit) *limitError
	// settle gives back (delta < 0) or counts (delta > 0) units of a
	// reservation (reserve.go) counted at the instant at.
	settle func(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error)
	// settleAt is set for a script whose settle must know which window
	// counted the reservation: Reserve counts on this process's clock (a
	// caller clock the scripts take within 60 s of TIME), and at is that
	// instant. A state script (GCRA, the buckets) ignores at.
	settleAt bool
}

// request is one request of a batch: its cost and the instant its caller
// stops waiting (zero: none).
type request struct {
	cost int64
	due  time.Time
}

// outcome is one request's answer in a batch: err is errExpired when the
// server ran it at or after its deadline.
type outcome struct {
	r   reply
	err error
}

var scripts = [...]script{
	GCRA: settles(batched(oneKey(bindings.GCRA), oneKeyQueued((*bindings.Batch).GCRA), paced, func(l Limit, now time.Time, reqs []bindings.GCRARequest) bindings.GCRAParams {
		return bindings.GCRAParams{Burst: l.Burst, Rate: l.Rate, Period: l.Period, Now: now, Take: bindings.GCRATakeAll, Requests: reqs}
	}, func(r bindings.GCRAResult) []bindings.GCRADecision { return r.Decisions }), settleGCRA),
	TokenBucket: settles(batched(oneKey(bindings.TokenBucket), oneKeyQueued((*bindings.Batch).TokenBucket), smoothFill, func(l Limit, now time.Time, reqs []bindings.TokenBucketRequest) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Now: now, Refill: bindings.TokenBucketRefillSmooth, Requests: reqs}
	}, func(r bindings.TokenBucketResult) []bindings.TokenBucketDecision { return r.Decisions }),
		settleTokenBucket(bindings.TokenBucketRefillSmoothRefund, bindings.TokenBucketRefillSmoothCharge)),
	TokenBucketInterval: settles(batched(oneKey(bindings.TokenBucket), oneKeyQueued((*bindings.Batch).TokenBucket), intervalFill, func(l Limit, now time.Time, reqs []bindings.TokenBucketRequest) bindings.TokenBucketParams {
		return bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Now: now, Refill: bindings.TokenBucketRefillInterval, Requests: reqs}
	}, func(r bindings.TokenBucketResult) []bindings.TokenBucketDecision { return r.Decisions }),
		settleTokenBucket(bindings.TokenBucketRefillIntervalRefund, bindings.TokenBucketRefillIntervalCharge)),
	LeakyBucket: settles(bind(bindings.LeakyBucket, (*bindings.Batch).LeakyBucket, paced, func(l Limit, cost int64, now, due time.Time) bindings.LeakyBucketParams {
		return bindings.LeakyBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Cost: cost, Now: now, Deadline: due}
	}), settleLeakyBucket),
	FixedWindow: settlesAt(bind(bindings.FixedWindow, (*bindings.Batch).FixedWindow, window(1e9), func(l Limit, cost int64, now, due time.Time) bindings.FixedWindowParams {
		p := bindings.FixedWindowParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
		if l.cal != 0 {
			p.Window, p.Form = bindings.FixedWindowWindowCalendar, []bindings.FixedWindowForm{calendarForm(l, "all", time.Time{}, now)}
		}
		return p
	}), settleFixedWindow),
	SlidingWindowLog: settlesAt(bind(bindings.SlidingWindowLog, (*bindings.Batch).SlidingWindowLog, window(10000), func(l Limit, cost int64, now, due time.Time) bindings.SlidingWindowLogParams {
		return bindings.SlidingWindowLogParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
	}), settleSlidingWindowLog),
	SlidingWindowCounter: settlesAt(bind(bindings.SlidingWindowCounter, (*bindings.Batch).SlidingWindowCounter, window(1e9), func(l Limit, cost int64, now, due time.Time) bindings.SlidingWindowCounterParams {
		return bindings.SlidingWindowCounterParams{Limit: l.Rate, Window: l.Period, Cost: cost, Now: now, Deadline: due}
	}), settleSlidingWindowCounter),
}

// checkLimit refuses what the algorithm's script would answer BADARG.
func checkLimit(a Algorithm, l Limit) error {
	fail := func(field, reason string) error {
		return &limitError{Algorithm: a, Limit: l, Field: field, Reason: reason}
	}
	switch {
	case l.cal != 0 && l.loc == nil:
		return fail("Location", "is nil: a quota by the calendar needs a time zone (time.UTC for UTC)")
	case l.cal != 0 && a != FixedWindow:
		return fail("", "a quota by the calendar (Daily, Weekly, Monthly, Yearly) counts in a FixedWindow")
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

// settles is s with its settle.
func settles(s script, settle func(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error)) script {
	s.settle = settle
	return s
}

// settlesAt is s with its settle, which must know the instant the
// reservation was counted at (settleAt).
func settlesAt(s script, settle func(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error)) script {
	s.settle, s.settleAt = settle, true
	return s
}

// settleLeakyBucket is leaky_bucket.lua's settle refund (delta < 0) or
// charge (delta > 0).
func settleLeakyBucket(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, _ time.Time) (reply, error) {
	word, n := bindings.LeakyBucketSettleCharge, delta
	if delta < 0 {
		word, n = bindings.LeakyBucketSettleRefund, -delta
	}
	r, err := bindings.LeakyBucket(ctx, c, key, bindings.LeakyBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Cost: n, Now: now, Deadline: call.Deadline(ctx), Settle: []bindings.LeakyBucketSettle{word}})
	return reply(r), call.ClockRefused(ctx, err)
}

// settleWord is the take of a window script's settle record.
func settleWord(delta int64) (string, int64) {
	if delta < 0 {
		return "refund", -delta
	}
	return "charge", delta
}

// settleSlidingWindowCounter is sliding_window_counter.lua's settle in
// the window that holds at, the instant the reservation was counted at.
func settleSlidingWindowCounter(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error) {
	take, n := settleWord(delta)
	r, err := bindings.SlidingWindowCounter(ctx, c, key, bindings.SlidingWindowCounterParams{Limit: l.Rate, Window: l.Period, Cost: n, Now: now, Deadline: call.Deadline(ctx),
		Settle: []bindings.SlidingWindowCounterSettle{{Take: take, At: at}}})
	return reply(r), call.ClockRefused(ctx, err)
}

// settleSlidingWindowLog is sliding_window_log.lua's settle of the
// members at at, the instant the reservation was counted at.
func settleSlidingWindowLog(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error) {
	take, n := settleWord(delta)
	r, err := bindings.SlidingWindowLog(ctx, c, key, bindings.SlidingWindowLogParams{Limit: l.Rate, Window: l.Period, Cost: n, Now: now, Deadline: call.Deadline(ctx),
		Settle: []bindings.SlidingWindowLogSettle{{Take: take, At: at}}})
	return reply(r), call.ClockRefused(ctx, err)
}

// calendarForm is fixed_window.lua's form for a call at now (zero: the
// server's clock) of take, and at for a settle: a quota's periods, or
// the epoch's (zeros) for a rate.
func calendarForm(l Limit, take string, at, now time.Time) bindings.FixedWindowForm {
	f := bindings.FixedWindowForm{Take: take, At: at}
	if l.cal != 0 {
		f.PeriodStart, f.PeriodEnd, f.NextEnd = l.periods(now)
	}
	return f
}

// settleFixedWindow is fixed_window.lua's take refund (delta < 0) or take
// charge (delta > 0) of a reservation counted at the instant at: only the
// window (or period) that holds at moves.
func settleFixedWindow(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error) {
	take, n := settleWord(delta)
	p := bindings.FixedWindowParams{Limit: l.Rate, Window: l.Period, Cost: n, Now: now, Deadline: call.Deadline(ctx)}
	if l.cal != 0 {
		p.Window = bindings.FixedWindowWindowCalendar
	}
	form := [1]bindings.FixedWindowForm{calendarForm(l, take, at, now)}
	p.Form = form[:]
	r, err := bindings.FixedWindow(ctx, c, key, p)
	return reply(r), call.ClockRefused(ctx, err)
}

// settleGCRA is gcra.lua's take refund (delta < 0) or take charge (delta >
// 0), one request. Its reply's Allowed is whether any unit moved:
// Remaining counts what passes now, RetryAfter the wait for one.
func settleGCRA(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, _ time.Time) (reply, error) {
	take, n := bindings.GCRATakeCharge, delta
	if delta < 0 {
		take, n = bindings.GCRATakeRefund, -delta
	}
	reqs := [1]bindings.GCRARequest{{Cost: n, Deadline: call.Deadline(ctx)}}
	r, err := bindings.GCRA(ctx, c, []string{key}, bindings.GCRAParams{Burst: l.Burst, Rate: l.Rate, Period: l.Period, Now: now, Take: take, Requests: reqs[:]})
	return oneSettled(ctx, r.Decisions, err)
}

// settleTokenBucket is token_bucket.lua's settle with the refill words of
// one way of refilling: refund (delta < 0) or charge (delta > 0).
func settleTokenBucket(refund, charge bindings.TokenBucketRefill) func(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, at time.Time) (reply, error) {
	return func(ctx context.Context, c redis.Scripter, key string, l Limit, delta int64, now, _ time.Time) (reply, error) {
		refill, n := charge, delta
		if delta < 0 {
			refill, n = refund, -delta
		}
		reqs := [1]bindings.TokenBucketRequest{{Cost: n, Deadline: call.Deadline(ctx)}}
		r, err := bindings.TokenBucket(ctx, c, []string{key}, bindings.TokenBucketParams{Capacity: l.Burst, Rate: l.Rate, Period: l.Period, Now: now, Refill: refill, Requests: reqs[:]})
		return oneSettled(ctx, r.Decisions, err)
	}
}

// oneSettled reads a settle's one decision.
func oneSettled[D decisionOf](ctx context.Context, ds []D, err error) (reply, error) {
	if err != nil {
		return reply{}, call.ClockRefused(ctx, err)
	}
	if len(ds) != 1 {
		return reply{}, countError(1, len(ds))
	}
	o := outcomeOf(ds[0])
	if o.err != nil {
		return reply{}, call.ClockRefused(ctx, o.err)
	}
	return o.r, nil
}

// decisionOf is the shape of a batch script's generated decision record,
// which converts to reply.
type decisionOf interface {
	~struct {
		Allowed    int64
		Remaining  int64
		RetryAfter time.Duration
		ResetAfter time.Duration
	}
}

// errExpired is a request of a batch that Redis ran at or after its
// deadline (it counted nothing): call.ClockRefused tells, by the request's
// own context, whether its caller gave up or Redis's clock runs ahead.
var errExpired = &bindings.ScriptError{Script: "ratelimit", Code: "EXPIRED", Message: "Redis ran the request at or after its deadline; nothing changed"}

// batched is bind for a script that decides a batch of requests: run and
// queue send a batch of one, batch sends reqs in order.
// oneKey and oneKeyQueued call a script that takes many keys (gcra.lua)
// with the one key a limiter's call names. Calls on many keys at once are
// the send stage's (internal/multikey), which joins such calls.
func oneKey[P, R any](f func(context.Context, redis.Scripter, []string, P) (R, error)) func(context.Context, redis.Scripter, string, P) (R, error) {
	return func(ctx context.Context, c redis.Scripter, key string, p P) (R, error) {
		return f(ctx, c, []string{key}, p)
	}
}

func oneKeyQueued[P, R any](f func(*bindings.Batch, []string, P) *bindings.Pending[R]) func(*bindings.Batch, string, P) *bindings.Pending[R] {
	return func(b *bindings.Batch, key string, p P) *bindings.Pending[R] {
		return f(b, []string{key}, p)
	}
}

func batched[P, R any, Q ~struct {
	Cost     int64
	Deadline time.Time
}, D decisionOf](
	run func(context.Context, redis.Scripter, string, P) (R, error),
	queue func(*bindings.Batch, string, P) *bindings.Pending[R],
	check func(Limit) *limitError,
	params func(l Limit, now time.Time, reqs []Q) P,
	decisions func(R) []D,
) script {
	one := func(ctx context.Context, r R, err error) (reply, error) {
		if err != nil {
			return reply{}, call.ClockRefused(ctx, err)
		}
		ds := decisions(r)
		if len(ds) != 1 {
			return reply{}, countError(1, len(ds))
		}
		o := outcomeOf(ds[0])
		if o.err != nil {
			return reply{}, call.ClockRefused(ctx, o.err)
		}
		return o.r, nil
	}
	return script{
		run: func(ctx context.Context, c redis.Scripter, key string, l Limit, cost int64, now time.Time) (reply, error) {
			// One request on the stack: a lone decision allocates no slice
			// for it.
			reqs := [1]Q{{Cost: cost, Deadline: call.Deadline(ctx)}}
			r, err := run(ctx, c, key, params(l, now, reqs[:]))
			return one(ctx, r, err)
		},
		queue: func(ctx context.Context, b *bindings.Batch, key string, l Limit, cost int64, now time.Time) func() (reply, error) {
			p := queue(b, key, params(l, now, []Q{{Cost: cost, Deadline: call.Deadline(ctx)}}))
			return func() (reply, error) {
				r, err := p.Result()
				return one(ctx, r, err)
			}
		},
		batch: func(ctx context.Context, c redis.Scripter, key string, l Limit, now time.Time, reqs []request) ([]outcome, error) {
			qs := make([]Q, len(reqs))
			for i, q := range reqs {
				qs[i] = Q{Cost: q.cost, Deadline: q.due}
			}
			r, err := run(ctx, c, key, params(l, now, qs))
			if err != nil {
				return nil, err
			}
			ds := decisions(r)
			if len(ds) != len(reqs) {
				return nil, countError(len(reqs), len(ds))
			}
			out := make([]outcome, len(ds))
			for i, d := range ds {
				out[i] = outcomeOf(d)
			}
			return out, nil
		},
		check: check,
	}
}

// outcomeOf reads one decision of a batch script.
func outcomeOf[D decisionOf](d D) outcome {
	v := struct {
		Allowed    int64
		Remaining  int64
		RetryAfter time.Duration
		ResetAfter time.Duration
	}(d)
	if v.Allowed < 0 {
		return outcome{err: errExpired}
	}
	return outcome{r: reply{Allowed: v.Allowed > 0, Remaining: v.Remaining, RetryAfter: v.RetryAfter, ResetAfter: v.ResetAfter}}
}

// countError is a batch reply with another number of decisions than the
// requests sent.
func countError(want, got int) error {
	return &bindings.ReplyError{Script: "ratelimit", Name: "decisions",
		Want: fmt.Sprintf("%d decisions, one per request", want), Got: fmt.Sprintf("%d", got)}
}

// scriptCall is one call of a script: a decision on one Redis key, alone
// or in a pipeline.
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
