// Package inflight caps the requests in flight per key, across every
// process that shares a Redis: each holds a Lease from Acquire until it
// releases it (concurrency.lua).
//
//	inFlight, err := inflight.New(rdb, "uploads", 10, 30*time.Second)
//	lease, d, err := inFlight.Acquire(ctx, "user:42")
//	if err != nil || !d.Allowed {
//		return
//	}
//	defer lease.Release(context.WithoutCancel(ctx))
//
// Middleware does the same for an http.Handler.
package inflight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
	"github.com/redlimit/redlimit/ratelimit/internal/option"
)

// A Limiter caps the requests in flight per key, across every process that
// builds one with the same name. A lease lives TTL unless renewed, so a
// holder that crashes frees its slot when the TTL runs out. A Limiter is
// safe for concurrent use.
type Limiter struct {
	rdb       redis.Scripter
	limit     int64
	ttl       time.Duration
	name      string
	prefix    string
	clock     func() time.Time
	onFailure call.Policy
	timeout   time.Duration
	forgets   chan struct{} // releases of failed acquires under way
	local     *local        // FailLocal's in-process cap
}

// A Decision is Acquire's answer: Limit is the cap, Remaining the slots
// free, RetryAfter (on a denial) when enough leases expire for one more if
// no holder releases, ResetAfter when all will have. Fallback and Cause are
// as in ratelimit.Decision.
type Decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Fallback   ratelimit.Fallback
	Cause      error
}

// String reads like "allowed, 1 of 2 left, full in 30s", "denied, 0 of 2
// left, retry in 30s, full in 30s" or "allowed by fail-open (cause)".
func (d Decision) String() string {
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	if d.Cause != nil {
		verdict = fmt.Sprintf("%s by %v (%v)", verdict, d.Fallback, d.Cause)
		if d.Fallback == ratelimit.FailOpen || d.Fallback == ratelimit.FailClosed {
			return verdict
		}
	}
	s := fmt.Sprintf("%s, %d of %d left", verdict, d.Remaining, d.Limit)
	if !d.Allowed {
		s += fmt.Sprintf(", retry in %v", d.RetryAfter)
	}
	return s + fmt.Sprintf(", full in %v", d.ResetAfter)
}

// The bounds concurrency.lua puts on a limiter.
const (
	maxInFlight = 10000
	maxLeaseTTL = 24 * time.Hour
)

// ErrLeaseLost: the lease is no longer held: it expired, or was released.
// Renew returns it, and so does the first Release of an expired lease.
var ErrLeaseLost = errors.New("inflight: the lease is no longer held")

// An Option configures a Limiter in New.
type Option func(*Limiter) error

// WithPrefix sets the Redis key prefix instead of "rl:inflight:<name>:".
// It may not hold '{' or '}'.
func WithPrefix(prefix string) Option {
	return func(l *Limiter) error {
		if err := option.Prefix(prefix); err != nil {
			return err
		}
		l.prefix = prefix
		return nil
	}
}

// WithClock makes the limiter send now() as the script's clock instead of
// using the server's TIME, as ratelimit.WithClock does.
func WithClock(now func() time.Time) Option {
	return func(l *Limiter) error { l.clock = now; return nil }
}

// WithTimeout bounds each call to Redis, as ratelimit.WithTimeout does.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) error {
		if err := option.Timeout(d); err != nil {
			return err
		}
		l.timeout = d
		return nil
	}
}

// WithFallback sets what Acquire decides when Redis fails or times out:
// ratelimit.FailOpen allows without a lease, FailClosed denies, FailLocal
// caps in this process at its share of the limit.
func WithFallback(f ratelimit.Fallback) Option {
	return func(l *Limiter) error {
		p := call.PolicyOf(f)
		if err := option.Fallback(p); err != nil {
			return err
		}
		l.onFailure = p
		return nil
	}
}

// New returns a Limiter named name over rdb that lets at most limit
// requests per key (1 to 10000) hold a lease at once, each living ttl (whole
// milliseconds, at most 24 h) unless renewed or released. Its keys are
// "rl:inflight:<name>:{<key>}". It refuses anything else with
// ratelimit.ErrInvalid.
func New(rdb redis.Scripter, name string, limit int64, ttl time.Duration, opts ...Option) (*Limiter, error) {
	if err := option.Client(rdb); err != nil {
		return nil, err
	}
	if err := key.CheckName(name); err != nil {
		return nil, err
	}
	if limit < 1 || limit > maxInFlight {
		return nil, fmt.Errorf("%w: %d in flight, want 1 to %d", ratelimit.ErrInvalid, limit, maxInFlight)
	}
	if ttl < time.Millisecond || ttl > maxLeaseTTL || ttl%time.Millisecond != 0 {
		return nil, fmt.Errorf("%w: lease TTL %v, want a whole number of milliseconds from 1ms to 24h", ratelimit.ErrInvalid, ttl)
	}
	l := &Limiter{rdb: guard.Wrap(rdb), limit: limit, ttl: ttl, name: name, prefix: "rl:inflight:" + name + ":", forgets: make(chan struct{}, maxForgets)}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if l.onFailure.Mode == call.Local {
		l.local = &local{held: map[string]int64{}, limit: max(1, int64(float64(limit)*l.onFailure.Share))}
	}
	return l, nil
}

// RedisKey returns the Redis key that holds key's leases.
func (l *Limiter) RedisKey(k string) string { return key.Redis(l.prefix, k) }

// Acquire takes a lease for key if fewer than Limit are held. A denied or
// fail-open Acquire returns a nil Lease, whose methods do nothing, so a
// deferred Release needs no check.
func (l *Limiter) Acquire(ctx context.Context, k string) (*Lease, Decision, error) {
	id, err := newLeaseID()
	if err != nil {
		return nil, Decision{Limit: l.limit}, err
	}
	r, err := l.call(ctx, k, opAcquire, id)
	if err != nil {
		l.forget(k, id, err)
		return l.fail(ctx, k, err)
	}
	d := Decision{Allowed: r.Allowed, Limit: l.limit, Remaining: r.Remaining, RetryAfter: r.RetryAfter, ResetAfter: r.ResetAfter}
	if !d.Allowed {
		return nil, d, nil
	}
	return &Lease{c: l, key: k, id: id}, d, nil
}

// fail turns an error into the Decision the fallback makes, or
// returns it.
func (l *Limiter) fail(ctx context.Context, k string, err error) (*Lease, Decision, error) {
	err = call.Classify(ctx, err)
	d := Decision{Limit: l.limit}
	if l.onFailure.Mode == call.None || !errors.Is(err, ratelimit.ErrUnavailable) {
		return nil, d, err
	}
	d.Cause = err
	switch l.onFailure.Mode {
	case call.Open:
		d.Fallback, d.Allowed = ratelimit.FailOpen, true
		return nil, d, nil
	case call.Closed:
		d.Fallback = ratelimit.FailClosed
		return nil, d, nil
	}
	d.Fallback = ratelimit.FailLocal(l.onFailure.Share)
	d.Limit = l.local.limit
	var ok bool
	d.Remaining, ok = l.local.acquire(k)
	if !ok {
		return nil, d, nil
	}
	d.Allowed = true
	return &Lease{c: l, key: k, local: true}, d, nil
}

// forget gives back, in the background and best effort, a slot whose
// holder gave up on it: that of an acquire that failed other than by the
// script's own answer (a timeout or a lost connection says nothing of
// whether the acquire ran), and that of a release that failed so. An
// acquire that Redis runs after its caller gave up holds nothing (its
// deadline, scripts.go), but one that ran in time and whose answer was
// lost, or a lease whose release never got through, would hold its slot
// for the whole TTL. The release is worth sending until then, so it gets
// the lease's TTL, not the limiter's timeout, and is sent again until it
// gets through: an outage or a stalled server shorter than the TTL cannot
// stop it (a release carries no deadline). At
// most maxForgets run at once per limiter (an outage must not pile up
// goroutines).
func (l *Limiter) forget(k, id string, err error) {
	if !errors.Is(call.Classify(context.Background(), err), ratelimit.ErrUnavailable) {
		return
	}
	select {
	case l.forgets <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-l.forgets }()
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		defer cancel()
		// Until it gets through: while the node is down the guard fails a
		// call at once, and it lets calls through again within its probe
		// interval of the node's return. The waits double from
		// forgetEvery up to forgetAtMost, so an outage costs few tries and a
		// return is met within forgetAtMost.
		wait := forgetEvery
		for {
			now, err := call.Clock(l.clock)
			if err == nil {
				_, err = leaseOp(ctx, l.rdb, l.RedisKey(k), opRelease, id, l.limit, l.ttl, now)
			}
			if err == nil || !errors.Is(call.Classify(ctx, err), ratelimit.ErrUnavailable) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, forgetAtMost)
		}
	}()
}

// A background release that fails is sent again after forgetEvery, then
// after twice as long each time, up to forgetAtMost.
const (
	forgetEvery  = 50 * time.Millisecond
	forgetAtMost = 500 * time.Millisecond
)

const maxForgets = 64

// call runs one op of concurrency.lua for key within the limiter's timeout.
func (l *Limiter) call(ctx context.Context, k string, op leaseOpName, id string) (reply, error) {
	if k == "" {
		return reply{}, fmt.Errorf("%w: empty key", ratelimit.ErrInvalid)
	}
	now, err := call.Clock(l.clock)
	if err != nil {
		return reply{}, err
	}
	return call.WithTimeout(ctx, l.timeout, func(ctx context.Context) (reply, error) {
		return leaseOp(ctx, l.rdb, l.RedisKey(k), op, id, l.limit, l.ttl, now)
	})
}

// A Lease is one slot of a Limiter, held from Acquire until Release, or
// until its TTL runs out without a Renew. Its methods are safe for
// concurrent use, and do nothing on a nil *Lease.
type Lease struct {
	c     *Limiter
	key   string
	id    string
	local bool // FailLocal's: held in this process, not in Redis

	mu   sync.Mutex
	done bool // released, or known lost
}

// ID returns the lease's id: 32 hex digits of crypto/rand ("" for a lease
// FailLocal gave, which lives in this process only).
func (l *Lease) ID() string { return l.id }

// Key returns the key the lease was acquired for.
func (l *Lease) Key() string { return l.key }

// Release gives the slot back; later calls return nil. The first returns
// ErrLeaseLost when the lease had expired. One that fails is sent again in
// the background until the TTL. Pass a context that outlives the
// request's (context.WithoutCancel).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	if l.local {
		l.done = true
		l.c.local.release(l.key)
		return nil
	}
	r, err := l.c.call(ctx, l.key, opRelease, l.id)
	if err != nil {
		// Given back in the background too, in case the caller does not
		// try again.
		l.c.forget(l.key, l.id, err)
		return call.Classify(ctx, err)
	}
	l.done = true
	if !r.Allowed {
		return ErrLeaseLost
	}
	return nil
}

// Renew extends the lease to the TTL from now (never shortening it). It
// returns ErrLeaseLost when the lease is no longer held: stop, or acquire
// again.
func (l *Lease) Renew(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return ErrLeaseLost
	}
	if l.local {
		return nil // held until released
	}
	r, err := l.c.call(ctx, l.key, opRenew, l.id)
	if err != nil {
		return call.Classify(ctx, err)
	}
	if !r.Allowed {
		l.done = true
		return ErrLeaseLost
	}
	return nil
}

// KeepAlive renews the lease every third of its TTL until stop is called,
// ctx ends, or the lease is lost; a renew that fails is tried at the next
// tick. stop waits for the renewing to end.
func (l *Lease) KeepAlive(ctx context.Context) (stop func()) {
	if l == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.c.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if errors.Is(l.Renew(ctx), ErrLeaseLost) {
					return
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// newLeaseID is 128 bits from crypto/rand as 32 hex digits: an id nobody
// can guess, within concurrency.lua's 1 to 64 of [0-9A-Za-z_-].
func newLeaseID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ratelimit: no random lease id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
