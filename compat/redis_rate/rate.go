package redis_rate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// Never is the RetryAfter of a cost that can never pass, because it is
// above the limit's burst: the longest time.Duration, as x/time/rate's
// InfDuration. redis_rate itself answers such a call with a finite wait,
// after which the call is denied again.
const Never time.Duration = math.MaxInt64

// ErrBadState matches, with errors.Is, the error of a call whose key holds
// a string that is not redlimit's GCRA state, such as state written by
// redis_rate itself. The key is left untouched.
var ErrBadState = bindings.ErrBadState

// rediser is what a Limiter needs of its client: the same methods as
// redis_rate's, so whatever a service passes to redis_rate.NewLimiter
// (*redis.Client, *redis.ClusterClient, *redis.Ring, a UniversalClient)
// it can pass here.
type rediser interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// Limit is a rate of Rate events per Period, of which Burst may happen at
// once.
type Limit struct {
	Rate   int
	Burst  int
	Period time.Duration
}

// String describes the limit as redis_rate does: "10 req/s (burst 10)".
func (l Limit) String() string {
	unit := l.Period.String()
	switch l.Period {
	case time.Second:
		unit = "s"
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	}
	return fmt.Sprintf("%d req/%s (burst %d)", l.Rate, unit, l.Burst)
}

// IsZero reports whether l is the zero Limit. A Limiter refuses it: a
// zero Limit never turns limiting off.
func (l Limit) IsZero() bool { return l == Limit{} }

// PerSecond is rate events a second, all of which may happen at once.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Second} }

// PerMinute is rate events a minute, all of which may happen at once.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Minute} }

// PerHour is rate events an hour, all of which may happen at once.
func PerHour(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Hour} }

// Limiter decides, on Redis, how often events may happen for each key.
// The Limit travels with each call.
type Limiter struct {
	rdb rediser
}

// NewLimiter returns a Limiter that keeps its state in rdb.
func NewLimiter(rdb rediser) *Limiter {
	return &Limiter{rdb: rdb}
}

// Allow is AllowN(ctx, key, limit, 1).
func (l Limiter) Allow(ctx context.Context, key string, limit Limit) (*Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN reports whether n events may happen now, and counts them if they
// may: all or none. n = 0 counts nothing and is never limited (RetryAfter
// -1); it reports Remaining and ResetAfter. A negative n is refused.
func (l Limiter) AllowN(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	r, err := gcra(ctx, l.rdb, key, limit, n, bindings.GCRATakeAll)
	if err != nil {
		return nil, err
	}
	res := &Result{Limit: limit, Remaining: int(r.Remaining), RetryAfter: -1, ResetAfter: r.ResetAfter}
	switch {
	case n == 0:
		// The script answers cost 0 as a peek for a cost of 1; a zero
		// cost itself always fits.
	case r.Allowed == 1:
		res.Allowed = n
	case r.RetryAfter == bindings.GCRADecisionRetryAfterNever:
		res.RetryAfter = Never
	default:
		res.RetryAfter = r.RetryAfter
	}
	return res, nil
}

// AllowAtMost counts as many of n events as may happen now, up to n, in
// one atomic call, and reports how many in Allowed. When none may,
// RetryAfter is the time until one may. n = 0 counts nothing: it answers
// as a call of 1 would, without counting it.
func (l Limiter) AllowAtMost(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	r, err := gcra(ctx, l.rdb, key, limit, n, bindings.GCRATakeAtMost)
	if err != nil {
		return nil, err
	}
	res := &Result{Limit: limit, Allowed: int(r.Allowed), Remaining: int(r.Remaining), RetryAfter: -1, ResetAfter: r.ResetAfter}
	if r.Allowed == 0 && r.RetryAfter > 0 {
		res.RetryAfter = r.RetryAfter
	}
	return res, nil
}

// Reset deletes the key's state: its next call finds a full burst.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, redisPrefix+key).Err()
}

// Result is the outcome of one call.
type Result struct {
	// Limit is the limit the call was decided with.
	Limit Limit

	// Allowed is the number of events the call counted: n or 0 for
	// AllowN, up to n for AllowAtMost.
	Allowed int

	// Remaining is the number of events that could still happen at once
	// for this key. At 10 a second with 6 counted this second, it is 4.
	Remaining int

	// RetryAfter is -1 when the call was not limited. When it was, it is
	// the time until the call could pass, rounded up to a whole
	// millisecond, or Never when its cost is above the burst.
	RetryAfter time.Duration

	// ResetAfter is the time until the key is back to a full burst
	// (Remaining equal to the burst), rounded up to a whole millisecond.
	// At 10 a second with one event counted 200 ms ago, it is 0; with one
	// counted just now, 100 ms.
	ResetAfter time.Duration
}
