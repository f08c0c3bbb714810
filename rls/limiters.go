package rls

// This file is the one that decides with package ratelimit (server.go
// only names its Client type): the rest of the server sees a rule's
// limiter, an outcome and an error.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
	"github.com/redlimit/redlimit/ratelimit/preflight"
)

var algorithms = map[string]ratelimit.Algorithm{
	"fixed_window":           ratelimit.FixedWindow,
	"gcra":                   ratelimit.GCRA,
	"token_bucket":           ratelimit.TokenBucket,
	"sliding_window_counter": ratelimit.SlidingWindowCounter,
	"sliding_window_log":     ratelimit.SlidingWindowLog,
	"leaky_bucket":           ratelimit.LeakyBucket,
}

// maxCost is the largest cost the scripts count at once.
const maxCost = 1e9

// limiters makes the limiters of rules: one ratelimit.Limiter per
// algorithm and period, of which each rule takes a copy with its own
// limit (Limiter.WithLimit), so rules and reloads share one deny cache,
// and one send stage across keys, per algorithm and period. (A base per
// algorithm would batch rules of different periods too, but the period
// would move into the hash tag, changing every key; measured with three
// descriptors of two periods a request, it saved nothing.)
type limiters struct {
	rdb    ratelimit.Client
	prefix string
	opts   []ratelimit.Option
	mu     sync.Mutex
	bases  map[string]*ratelimit.Limiter
}

// limiterOptions are what the environment sets for every limiter.
type limiterOptions struct {
	prefix    string        // CACHE_KEY_PREFIX
	timeout   time.Duration // per decision
	onFailure string        // error, allow, deny or local:<share>
	denyCache int           // entries; 0 turns it off
}

func newLimiters(rdb ratelimit.Client, o limiterOptions) (*limiters, error) {
	ls := &limiters{rdb: rdb, prefix: o.prefix, bases: map[string]*ratelimit.Limiter{}}
	ls.opts = append(ls.opts, ratelimit.WithTimeout(o.timeout), ratelimit.WithDenyCache(o.denyCache))
	switch p := o.onFailure; {
	case p == "" || p == "error":
	case p == "allow":
		ls.opts = append(ls.opts, ratelimit.WithFallback(ratelimit.FailOpen))
	case p == "deny":
		ls.opts = append(ls.opts, ratelimit.WithFallback(ratelimit.FailClosed))
	case strings.HasPrefix(p, "local:"):
		share, err := strconv.ParseFloat(strings.TrimPrefix(p, "local:"), 64)
		if err != nil || !(share > 0 && share <= 1) {
			return nil, fmt.Errorf("REDLIMIT_ON_REDIS_FAILURE=%s: want local:<share> with 0 < share <= 1", p)
		}
		ls.opts = append(ls.opts, ratelimit.WithFallback(ratelimit.FailLocal(share)))
	default:
		return nil, fmt.Errorf("REDLIMIT_ON_REDIS_FAILURE=%s: want error, allow, deny or local:<share>", p)
	}
	// Refuse a bad prefix at start, not at the first rule.
	if _, err := ls.base("fixed_window", "fixed_window:second", ratelimit.PerSecond(1)); err != nil {
		return nil, fmt.Errorf("CACHE_KEY_PREFIX=%q: %w", o.prefix, err)
	}
	return ls, nil
}

// A limiter decides for one rule.
type limiter struct {
	l     *ratelimit.Limiter
	name  string // the algorithm and period: limiters of one name share keys
	burst int64
}

// bind gives r its limiter, or refuses its limit (a rate, burst or period
// the algorithm's script does not take) in the words of package ratelimit.
// Unlimited rules and rules of 0 per unit are decided without Redis.
func (ls *limiters) bind(r *Rule) error {
	if r.Unlimited || r.RequestsPerUnit == 0 {
		if r.Burst != 0 {
			return errors.New("a rate_limit of 0 requests_per_unit takes no burst")
		}
		return nil
	}
	name := r.Algorithm + ":" + periodName(r.Period)
	limit := ratelimit.Limit{Rate: int64(r.RequestsPerUnit), Period: r.Period, Burst: int64(r.RequestsPerUnit)}
	if r.Burst != 0 {
		limit.Burst = r.Burst
	}
	if r.loc != nil {
		// A quota: its keys name the zone, so that two zones' days
		// never share a count.
		name = r.Algorithm + ":" + strings.ToLower(r.Unit.String()) + "@" + r.Calendar
		limit = calendarUnits[r.Unit](int64(r.RequestsPerUnit), r.loc)
	}
	base, err := ls.base(r.Algorithm, name, limit)
	if err != nil {
		return err
	}
	l, err := base.WithLimit(limit)
	if err != nil {
		return fmt.Errorf("rate_limit of %d per %s (algorithm %s, burst %d): %v", r.RequestsPerUnit, periodName(r.Period), r.Algorithm, limit.Burst, strings.TrimPrefix(err.Error(), ratelimit.ErrInvalid.Error()+": "))
	}
	r.lim = &limiter{l: l, name: name + ":", burst: limit.Burst}
	return nil
}

// base is the limiter of an algorithm and period (name: the algorithm,
// the period's name and a calendar's zone). Its keys are
//
//	CACHE_KEY_PREFIX + "rls:" + algorithm + ":" + period + ":{" + escaped descriptor + "}"
//
// (the period "month@Europe/Berlin" for a calendar), so a rule's algorithm
// and unit are in its keys, and each descriptor is a hash tag of its own
// (see key). like is a limit of the kind its rules take.
func (ls *limiters) base(alg, name string, like ratelimit.Limit) (*ratelimit.Limiter, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.bases[name]; l != nil {
		return l, nil
	}
	opts := append([]ratelimit.Option{ratelimit.WithAlgorithm(algorithms[alg]), ratelimit.WithPrefix(ls.prefix + "rls:" + name + ":")}, ls.opts...)
	// The limit is a placeholder: each rule takes a copy with its own.
	like.Rate, like.Burst = 1, 1
	l, err := ratelimit.New(ls.rdb, "rls", like, opts...)
	if err != nil {
		return nil, err
	}
	ls.bases[name] = l
	return l, nil
}

// periodName is "second" … "year" for a unit, else the period in seconds
// (an override with a unit_multiplier).
func periodName(p time.Duration) string {
	for u, d := range unitPeriods {
		if d == p {
			return strings.ToLower(u.String())
		}
	}
	return strconv.FormatInt(int64(p/time.Second), 10) + "s"
}

// key is the descriptor's key within its limiter: the domain, then each
// entry's key and value, each part escaped (httplimit.JoinKey), so that no
// part can pose as another: ("a", "b_c") and ("a_b", "c") differ, and so
// do values holding ':' or any other byte.
func key(domain string, entries []*rlcommon.RateLimitDescriptor_Entry, values []string) string {
	parts := make([]string, 0, 2*len(entries))
	for i, e := range entries {
		parts = append(parts, e.Key, values[i])
	}
	return httplimit.JoinKey(domain, parts...)
}

// An outcome is what a limiter decided.
type outcome struct {
	allowed    bool
	remaining  int64
	retryAfter time.Duration // 0 when allowed; never when it can never pass
	resetAfter time.Duration
	cached     bool // the deny cache decided
	fallback   bool // the fallback decided (Redis did not)
}

const never = ratelimit.Never

// decide counts n for key if it passes; n = 0 only looks. With reserve
// it keeps what it counted open: the Reservation (nil when nothing was
// counted) gives it back.
func (l *limiter) decide(ctx context.Context, key string, n uint64, reserve bool) (outcome, *ratelimit.Reservation, error) {
	var d ratelimit.Decision
	var r *ratelimit.Reservation
	var err error
	switch {
	case n == 0 || n > maxCost:
		d, err = l.l.Peek(ctx, key)
		if n > maxCost && err == nil && d.Cause == nil {
			// More than any limit admits: denied, counting nothing.
			d.Allowed, d.RetryAfter = false, ratelimit.Never
		}
	case reserve:
		r, err = l.l.Reserve(ctx, key, int64(n))
		if r != nil {
			d = r.Decision
		}
	default:
		d, err = l.l.AllowN(ctx, key, int64(n))
	}
	if err != nil {
		return outcome{}, nil, err
	}
	return outcome{allowed: d.Allowed, remaining: d.Remaining, retryAfter: d.RetryAfter, resetAfter: d.ResetAfter, cached: d.Cached, fallback: d.Cause != nil}, r, nil
}

// errorKind sorts a limiter's error: "unavailable" (Redis failed or timed
// out), "invalid" (refused before Redis), or "state" (the key holds data
// that is not this rule's).
func errorKind(err error) string {
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, bindings.ErrWrongType), errors.Is(err, bindings.ErrBadState):
		return "state"
	}
	return "invalid"
}

// findings is what preflight.Check finds in the Redis behind c, one line
// each.
func findings(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	fs, err := preflight.Check(ctx, c)
	var lines []string
	for _, f := range fs {
		lines = append(lines, f.String())
	}
	return lines, err
}
