package ratelimit

// The send stage, the last before the script: one call of its own.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
	"github.com/redlimit/redlimit/ratelimit/internal/multikey"
)

// sender sends one decision to Redis within the limiter's timeout. Its
// client, rdb, is the send stage across keys (internal/multikey), which
// may carry the call in a batch with other keys' calls to its node.
type sender struct {
	rdb     redis.Scripter // the limiter's guarded client
	timeout time.Duration  // 0: the caller's context alone bounds a call
	late    *late          // gives back what answers too late admitted
}

// send decides a on the Redis key rk within the timeout.
func (s *sender) send(ctx context.Context, rk string, a ask) (reply, error) {
	if !s.plain(ctx) {
		sc := scriptOf(rk, a) // captured as it is: a is too large not to escape
		return s.call(ctx, rk, a, func(ctx context.Context) (reply, error) {
			return s.script(ctx, sc)
		})
	}
	return s.script(ctx, scriptOf(rk, a))
}

// call runs f, the call that decides a on rk, within the timeout. When its
// caller leaves first, a call that may count (a's cost is above 0) is read
// on, and an admission it reports is given back (late.go).
func (s *sender) call(ctx context.Context, rk string, a ask, f func(context.Context) (reply, error)) (reply, error) {
	var start time.Time
	if s.timeout > 0 {
		start = time.Now()
	}
	var r reply
	var err error
	if a.cost == 0 || s.late == nil || s.timeout <= 0 && ctx.Done() == nil {
		r, err = call.WithTimeout(ctx, s.timeout, f) // (its caller cannot leave it)
	} else {
		r, err = call.Outlive(ctx, s.timeout, lateWithin, f, func() (func(reply, error, bool), bool) {
			// Copies, made only for a caller that leaves: a call answered
			// in time keeps a and rk off the heap (183 B a decision).
			lt, left := s.late, leftCall{rk: rk, a: a}
			return func(r reply, err error, kept bool) {
				lt.answered(left.rk, left.a, r, err, kept)
			}, lt.stay()
		})
	}
	guard.Unanswered(ctx, multikey.Unwrap(s.rdb), rk, start, s.timeout, err) // a hung node
	return r, err
}

// plain reports whether nothing but its answer can end a call under ctx
// (no timeout, and a context that never ends): call would run it as it
// is, so its callers run it themselves, with no closure to allocate (one
// of 107–123 B a decision).
func (s *sender) plain(ctx context.Context) bool {
	return s.timeout <= 0 && ctx.Done() == nil
}

// down reports whether the node of rk has its breaker open: a call on rk
// fails at once, so it goes on its own rather than wait in a line behind
// a call the node holds (a hung node answers that one only when it runs
// again, or at go-redis's ReadTimeout).
func (s *sender) down(rk string) bool {
	return guard.Down(multikey.Unwrap(s.rdb), rk)
}

// script is the script call itself, bounded by ctx alone.
func (s *sender) script(ctx context.Context, sc scriptCall) (reply, error) {
	return scripts[sc.alg].run(ctx, s.rdb, sc.key, sc.limit, sc.cost, sc.now)
}

// leftCall is a call whose caller may leave it.
type leftCall struct {
	rk string
	a  ask
}

// scriptOf is the script call that decides a on the Redis key rk.
func scriptOf(rk string, a ask) scriptCall {
	return scriptCall{alg: a.alg, key: rk, limit: a.sends, cost: a.cost, now: a.now}
}

// due is the instant the caller of ctx stops waiting for a decision: its
// context's deadline, or the timeout from now if that is sooner (zero for
// neither), as send's call carries it.
func (s *sender) due(ctx context.Context) time.Time {
	d := call.Deadline(ctx)
	if s.timeout > 0 {
		if t := time.Now().Add(s.timeout); d.IsZero() || t.Before(d) {
			d = call.Due(t)
		}
	}
	return d
}
