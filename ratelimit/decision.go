package ratelimit

import (
	"fmt"
	"math"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// Never is the RetryAfter of a request that can never pass: it costs more
// than the Burst.
const Never time.Duration = math.MaxInt64

// A Decision is a rule's answer for one request, the same for every
// algorithm. The comments follow one example: a limiter named "api" with
// PerSecond(10), asked for 6 requests at once, then for 5 more.
type Decision struct {
	// Allowed reports whether the request passes: true for the 6, false
	// for the 5 (only 4 are left). A denied request counts nothing.
	Allowed bool
	// Name is the limiter's name, "api". For a rule of several limits, it
	// is the name of the one that binds (see Parts); "" for Unlimited.
	Name string
	// Limit is that limiter's limit: {Rate: 10, Period: 1s, Burst: 10}.
	// The most that can ever pass at once is its Burst.
	Limit Limit
	// Remaining is how many requests of cost 1 would pass right now,
	// never negative: 4 after the 6, still 4 after the denied 5.
	Remaining int64
	// RetryAfter is 0 when the request passes. When it is denied, it is the
	// wait after which the same request would pass if nothing else came,
	// never shorter than the real wait: 100ms for the 5 (one more comes
	// back every 100ms). Never when it can never pass (11 at once).
	RetryAfter time.Duration
	// ResetAfter is how long until the limit is full again if nothing else
	// comes: 600ms after the 6. For a quota (Monthly and the like) it runs
	// to the period's end, to the ms: the reset instant is now plus it.
	ResetAfter time.Duration
	// Fallback is the zero Fallback when no fallback decided. When Redis
	// could not be asked, it is the fallback that decided (WithFallback):
	// FailOpen, FailClosed or a FailLocal. Cause then says why; for
	// FailOpen and FailClosed, Remaining, RetryAfter and ResetAfter are 0.
	Fallback Fallback
	// Cause is the error a fallback decided in spite of (it matches
	// ErrUnavailable); nil when Redis decided.
	Cause error
	// Cached reports a denial the limiter's deny cache made without asking
	// Redis (WithDenyCache): RetryAfter counts down to the end of a denial
	// Redis made earlier, so it is never shorter than the real wait;
	// Remaining and ResetAfter are from that denial.
	Cached bool
	// LockedOut reports that the key is locked out (WithLockout): a
	// lockout under way denied the request, or the request started one by
	// using up the limit (RetryAfter, if denied, and ResetAfter then reach
	// the lockout's end).
	LockedOut bool
	// Source says who decided, in the words of hooks and metrics: "redis";
	// "redis-batch" when Redis decided it in one call with requests that
	// waited for a call on the same key (coalescing); "deny-cache"
	// (Cached); "lockout" when a lockout under way denied it; or the
	// fallback's word (Fallback.String). "" when nothing decided (the call
	// failed) and for Unlimited.
	Source string
	// Parts holds, for a rule of several limits (Atomic, All), each
	// limit's Decision in order, its Allowed saying whether that limit had
	// room; the fields above are those of the one that binds: on a denial,
	// the one with the longest RetryAfter, else the one with the least
	// Remaining. Nil for a single limit.
	Parts []Decision
}

// A Fallback is what a limiter decides when a call ends in ErrUnavailable
// (WithFallback). Other errors are always returned. The zero Fallback
// returns the error; in a Decision it means that no fallback decided
// (Decision.Source says who did).
type Fallback struct{ p call.Policy }

var (
	// FailOpen allows the request: availability over protection.
	FailOpen = Fallback{call.Policy{Mode: call.Open}}
	// FailClosed denies the request: protection over availability.
	FailClosed = Fallback{call.Policy{Mode: call.Closed}}
)

// FailLocal limits in this process's memory while Redis is unreachable, at
// share of the limit (0 < share <= 1): Rate and Burst times share, rounded
// down, at least 1. With n processes, a share of 1/n keeps the whole close
// to the limit.
func FailLocal(share float64) Fallback {
	return Fallback{call.Policy{Mode: call.Local, Share: share}}
}

func init() {
	call.PolicyOf = func(f any) call.Policy { return f.(Fallback).p }
}

// String is "fail-open", "fail-closed" or "fail-local", the words of
// Decision.Source and Decision.String; "" for the zero Fallback, which
// decides nothing.
func (f Fallback) String() string { return f.p.String() }

// The words of Decision.Source that are not a fallback's (Fallback.String).
const (
	sourceRedis     = "redis"
	sourceBatch     = "redis-batch"
	sourceDenyCache = "deny-cache"
	sourceLockout   = "lockout"
	sourceLate      = "late-refund" // an Event's, not a Decision's (hook.go)
)

// An ask is one decision on its way down the path (ARCHITECTURE.md): what
// each stage reads, passed by value so that a decision allocates none.
// (A reservation, a decision kept open and settled later, is an ask that
// says so; AllowN's is settled at once.)
type ask struct {
	name  string
	limit Limit // the limiter's: what a Decision names and a fallback decides by
	key   string
	cost  int64     // 0 peeks
	now   time.Time // the caller clock; zero for the server's
	// What the script is sent: the limiter's algorithm, prefix and limit,
	// or the lockout's (lockout.go).
	alg    Algorithm
	prefix string
	sends  Limit
}

// none is the Decision that goes with an error: who would have decided.
func (a ask) none() Decision { return Decision{Name: a.name, Limit: a.limit} }

// ceilMs rounds ns up to whole milliseconds, as the scripts answer: a
// Decision this process makes (the deny cache's, FailLocal's) looks like
// Redis's and its waits are never short.
func ceilMs(ns int64) time.Duration {
	const ms = int64(time.Millisecond)
	return time.Duration((ns + ms - 1) / ms * ms)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// combine makes one Decision of several: it passes when every part does,
// and reads as the part that binds. Parts that have parts of their own are
// flattened, so every limit appears once in Parts.
func combine(ds []Decision) Decision {
	var parts []Decision
	for _, d := range ds {
		if len(d.Parts) > 0 {
			parts = append(parts, d.Parts...)
		} else if d.Name != "" {
			parts = append(parts, d)
		}
	}
	switch len(parts) {
	case 0:
		return Decision{Allowed: true}
	case 1:
		return parts[0]
	}
	best := 0
	allowed := true
	for i, p := range parts {
		allowed = allowed && p.Allowed
		if stricter(p, parts[best]) {
			best = i
		}
	}
	d := parts[best]
	d.Allowed = allowed
	d.Parts = parts
	return d
}

// stricter reports whether a binds rather than b: a denial over an
// allowance, then the longer wait or the smaller Remaining; a decision a
// fallback made binds only when no decision from Redis does.
func stricter(a, b Decision) bool {
	if a.Allowed != b.Allowed {
		return !a.Allowed
	}
	if (a.Cause == nil) != (b.Cause == nil) {
		return a.Cause == nil
	}
	if !a.Allowed {
		return a.RetryAfter > b.RetryAfter
	}
	return a.Remaining < b.Remaining
}

// String reads like "allowed, 2 of 3 left, full in 667ms", "denied, 0 of 3
// left, retry in 333ms, full in 1s", "denied, locked out, 0 of 3 left,
// retry in 1h0m0s, full in 1h0m0s" or "allowed by fail-open (cause)"; a
// decision of several limits ends with the name of the one that binds.
func (d Decision) String() string {
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	if d.Cached {
		verdict += " by the deny cache"
	}
	switch {
	case d.LockedOut && d.Allowed:
		verdict += ", now locked out"
	case d.LockedOut:
		verdict += ", locked out"
	}
	if d.Name == "" {
		if !d.Allowed {
			return verdict
		}
		return verdict + ", unlimited"
	}
	var s string
	if d.Cause != nil {
		s = fmt.Sprintf("%s by %v (%v)", verdict, d.Fallback, d.Cause)
		if d.Fallback.p.Mode != call.Local {
			return s + d.suffix()
		}
		verdict = s
	}
	s = fmt.Sprintf("%s, %d of %d left", verdict, d.Remaining, d.Limit.Burst)
	switch {
	case d.RetryAfter == Never:
		s += ", can never pass"
	case !d.Allowed:
		s += fmt.Sprintf(", retry in %v", d.RetryAfter)
	}
	return s + fmt.Sprintf(", full in %v", d.ResetAfter) + d.suffix()
}

func (d Decision) suffix() string {
	if len(d.Parts) == 0 {
		return ""
	}
	return " (" + d.Name + ")"
}
