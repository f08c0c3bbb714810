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
	"github.com/redlimit/redlimit/ratelimit/internal/multikey"
	"github.com/redlimit/redlimit/ratelimit/internal/option"
)

// A Limiter caps the requests in flight per key, across every process that
// builds one with the same name. A lease lives TTL unless renewed, so a
// holder that crashes frees its slot when the TTL runs out. A Limiter is
// safe for concurrent use.
type Limiter struct {
	rdb       redis.Scripter // the guarded client: the background releases, the breaker
	stage     redis.Scripter // acquires, renews and releases: rdb under the send stage across keys
	limit     int64
	ttl       time.Duration
	name      string
	prefix    string
	clock     func() time.Time
	onFailure call.Policy
	timeout   time.Duration
	hook      func(context.Context, Event)
	pending   releases // failed releases, sent again in the background
	local     *local   // FailLocal's in-process cap
}

// A Decision is Acquire's answer: Limit is the cap, Remaining the slots
// free, RetryAfter (on a denial) when enough leases expire for one more if
// no holder releases, ResetAfter when all will have. Fallback, Cause and
// Source are as in ratelimit.Decision: Source is "redis", the fallback's
// word, or "" when nothing decided.
type Decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Fallback   ratelimit.Fallback
	Cause      error
	Source     string
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

// sourceRedis is Decision.Source when Redis decided: ratelimit's word.
const sourceRedis = "redis"

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
	// Acquires, renews and releases on other keys go together (the send
	// stage across keys, ratelimit/internal/multikey). Each carries its
	// caller's deadline, so one that a batch brings to Redis after its
	// caller gave up takes, extends or ends nothing: a release reported
	// failed, or dropped, leaves its lease as its error says. (Without a
	// deadline, 18 of 100 releases reported dropped on a stopped server ran
	// once it resumed, a batch of them having gone onto its socket as one
	// call.) The background releases go on the guarded client, in
	// pipelines.
	g := guard.Wrap(rdb)
	l := &Limiter{rdb: g, stage: multikey.Wrap(g, rdb), limit: limit, ttl: ttl, name: name, prefix: "rl:inflight:" + name + ":"}
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
	var start time.Time
	if l.hook != nil {
		start = time.Now()
	}
	lease, d, err := l.acquire(ctx, k)
	if l.hook != nil {
		l.hook(ctx, Event{Name: l.name, Key: k, Op: string(opAcquire), Decision: d, Err: err, Duration: time.Since(start)})
	}
	return lease, d, err
}

func (l *Limiter) acquire(ctx context.Context, k string) (*Lease, Decision, error) {
	id, err := newLeaseID()
	if err != nil {
		return nil, Decision{Limit: l.limit}, err
	}
	r, err := l.call(ctx, k, opAcquire, id)
	if err != nil {
		l.forget(k, id, false, err)
		return l.fail(ctx, k, err)
	}
	d := Decision{Allowed: r.Allowed, Limit: l.limit, Remaining: r.Remaining, RetryAfter: r.RetryAfter, ResetAfter: r.ResetAfter, Source: sourceRedis}
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
	d.Cause, d.Source = err, l.onFailure.String()
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

// forget gives back in the background a slot whose holder gave up on it,
// when err says nothing of whether the call ran (a timeout, a lost
// connection: ErrUnavailable): that of a failed acquire, whose answer may
// have been lost after it took a lease (not one the open breaker failed
// at once, which was never sent), and that of a holder's failed release
// (held). It returns ErrReleaseDropped when the release cannot be kept
// (see keep).
func (l *Limiter) forget(k, id string, held bool, err error) error {
	if !errors.Is(call.Classify(context.Background(), err), ratelimit.ErrUnavailable) || !held && guard.NotSent(err) {
		return nil
	}
	return l.keep(k, id, held, err)
}

// call runs one op of concurrency.lua for key within the limiter's timeout.
func (l *Limiter) call(ctx context.Context, k string, op leaseOpName, id string) (reply, error) {
	if k == "" {
		return reply{}, fmt.Errorf("%w: empty key", ratelimit.ErrInvalid)
	}
	now, err := call.Clock(l.clock)
	if err != nil {
		return reply{}, err
	}
	start := time.Now()
	r, err := call.WithTimeout(ctx, l.timeout, func(ctx context.Context) (reply, error) {
		return leaseOp(ctx, l.stage, l.RedisKey(k), op, id, l.limit, l.ttl, now)
	})
	guard.Unanswered(ctx, l.rdb, l.RedisKey(k), start, l.timeout, err) // a hung node
	return r, err
}

// A Lease is one slot of a Limiter, held from Acquire until Release, or
// until its TTL runs out without a Renew. Its methods are safe for
// concurrent use, and do nothing on a nil *Lease.
type Lease struct {
	c     *Limiter
	key   string
	id    string
	local bool // FailLocal's: held in this process, not in Redis

	mu     sync.Mutex
	done   bool // released, or known lost
	queued bool // its release is kept to send again
}

// ID returns the lease's id: 32 hex digits of crypto/rand ("" for a lease
// FailLocal gave, which lives in this process only).
func (l *Lease) ID() string { return l.id }

// Key returns the key the lease was acquired for.
func (l *Lease) Key() string { return l.key }

// Release gives the slot back; later calls return nil. The first returns
// ErrLeaseLost when the lease had expired. One that fails (ErrUnavailable)
// is sent again in the background until it gets through or the TTL
// passes; past MaxPending such releases it is dropped, and the error is
// ErrReleaseDropped too. Pass a context that outlives the request's
// (context.WithoutCancel).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	var start time.Time
	if l.c.hook != nil {
		start = time.Now()
	}
	err := l.release(ctx)
	if l.c.hook != nil {
		l.c.hook(ctx, Event{Name: l.c.name, Key: l.key, Op: string(opRelease), Err: err, Duration: time.Since(start)})
	}
	return err
}

func (l *Lease) release(ctx context.Context) error {
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
		err = call.Classify(ctx, err)
		if !l.queued { // once: a caller's retries add no more
			if derr := l.c.forget(l.key, l.id, true, err); derr != nil {
				return derr
			}
			l.queued = errors.Is(err, ratelimit.ErrUnavailable)
		}
		return err
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
	var start time.Time
	if l.c.hook != nil {
		start = time.Now()
	}
	err := l.renew(ctx)
	if l.c.hook != nil {
		l.c.hook(ctx, Event{Name: l.c.name, Key: l.key, Op: string(opRenew), Err: err, Duration: time.Since(start)})
	}
	return err
}

func (l *Lease) renew(ctx context.Context) error {
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
