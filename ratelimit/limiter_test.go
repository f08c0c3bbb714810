package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

var ctx = context.Background()

// newLimiter builds a limiter named "test" for alg that admits 10 at once
// and 10 per second (per 1 s window for the window algorithms).
func newLimiter(t testing.TB, rdb ratelimit.Client, alg ratelimit.Algorithm, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	return newNamed(t, rdb, "test", alg, opts...)
}

// newNamed is newLimiter with another name.
func newNamed(t testing.TB, rdb ratelimit.Client, name string, alg ratelimit.Algorithm, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(rdb, name, ratelimit.PerSecond(10), append([]ratelimit.Option{ratelimit.WithAlgorithm(alg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The bindings' trap: a forgotten Cost of 0 peeked, so 100 calls passed.
// Through ratelimit, Allow counts, for every algorithm.
func TestAllowCounts(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			l := newLimiter(t, f.rdb, alg)
			allowed := 0
			for i := 0; i < 100; i++ {
				d, err := l.Allow(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					allowed++
				}
				if d.Limit != ratelimit.PerSecond(10) || d.Name != "test" || d.Fallback != (ratelimit.Fallback{}) || d.Cause != nil || d.Parts != nil {
					t.Fatalf("call %d: %+v", i, d)
				}
			}
			if allowed != 10 {
				t.Errorf("%d of 100 allowed, want 10", allowed)
			}
		})
	}
}

// RetryAfter is exact through this layer too: a millisecond before it the
// same request is still denied, at it the request passes. A denial changes
// nothing, so the two probes do not disturb each other.
func TestRetryAfterIsNeverEarly(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		for _, n := range []int64{1, 3} {
			t.Run(fmt.Sprintf("%v/n=%d", alg, n), func(t *testing.T) {
				f := newFrozen(t)
				f.advance(123456 * time.Microsecond) // off the window grid
				l := newLimiter(t, f.rdb, alg)
				var d ratelimit.Decision
				for i := 0; ; i++ {
					var err error
					if d, err = l.AllowN(ctx, "k", n); err != nil {
						t.Fatal(err)
					}
					if !d.Allowed {
						break
					}
					if i > 20 {
						t.Fatal("never denied")
					}
				}
				if d.RetryAfter <= 0 || d.RetryAfter == ratelimit.Never {
					t.Fatalf("denied with RetryAfter %v", d.RetryAfter)
				}
				f.advance(d.RetryAfter - time.Millisecond)
				if early, _ := l.Peek(ctx, "k"); n == 1 && early.Allowed {
					t.Errorf("a peek 1 ms before RetryAfter %v passes", d.RetryAfter)
				}
				if early, _ := l.AllowN(ctx, "k", n); early.Allowed {
					t.Errorf("1 ms before RetryAfter %v, the request passes", d.RetryAfter)
				}
				f.advance(time.Millisecond)
				if on, _ := l.AllowN(ctx, "k", n); !on.Allowed {
					t.Errorf("at RetryAfter %v the request is still denied: %v", d.RetryAfter, on)
				}
			})
		}
	}
}

func TestNeverIsNamed(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		f := newFrozen(t)
		l := newLimiter(t, f.rdb, alg)
		d, err := l.AllowN(ctx, "k", 11)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.RetryAfter != ratelimit.Never || d.Remaining != 10 {
			t.Errorf("%v: AllowN(11) of 10 = %+v, want denied, RetryAfter Never, 10 left", alg, d)
		}
	}
}

func TestAllowNRefusesCosts(t *testing.T) {
	f := newFrozen(t)
	for _, alg := range ratelimit.Algorithms() {
		l := newLimiter(t, f.rdb, alg)
		for _, n := range []int64{0, -1, 1e9 + 1} {
			if _, err := l.AllowN(ctx, "k", n); !errors.Is(err, ratelimit.ErrInvalid) {
				t.Errorf("%v: AllowN(%d) err = %v, want ErrInvalid", alg, n, err)
			}
		}
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("refused calls wrote %v", keys)
	}
}

func TestPeekCountsNothing(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		f := newFrozen(t)
		l := newLimiter(t, f.rdb, alg)
		for i := 0; i < 20; i++ {
			d, err := l.Peek(ctx, "k")
			if err != nil || !d.Allowed || d.Remaining != 10 {
				t.Fatalf("%v: peek %d = %+v, %v", alg, i, d, err)
			}
		}
		if keys := f.Keys(); len(keys) != 0 {
			t.Errorf("%v: peeks wrote %v", alg, keys)
		}
		l.AllowN(ctx, "k", 4)
		a, _ := l.Peek(ctx, "k")
		b, _ := l.Peek(ctx, "k")
		if a.String() != b.String() || a.Remaining != 6 {
			t.Errorf("%v: peeks after 4 = %+v then %+v, want 6 left twice", alg, a, b)
		}
	}
}

func TestEmptyKey(t *testing.T) {
	f := newFrozen(t)
	l := newLimiter(t, f.rdb, ratelimit.GCRA)
	if _, err := l.Allow(ctx, ""); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Allow: %v", err)
	}
	if _, err := l.Peek(ctx, ""); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Peek: %v", err)
	}
	if err := l.Reset(ctx, ""); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Reset: %v", err)
	}
}

func TestReset(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		f := newFrozen(t)
		l := newLimiter(t, f.rdb, alg)
		other := newNamed(t, f.rdb, "other", alg)
		l.AllowN(ctx, "k", 10)
		l.AllowN(ctx, "k2", 10)
		other.AllowN(ctx, "k", 10)
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			l    *ratelimit.Limiter
			key  string
			left int64
		}{{l, "k", 10}, {l, "k2", 0}, {other, "k", 0}} {
			if d, _ := c.l.Peek(ctx, c.key); d.Remaining != c.left {
				t.Errorf("%v: after Reset, %s has %d left, want %d", alg, c.l.RedisKey(c.key), d.Remaining, c.left)
			}
		}
	}
}

// A caller clock is a time.Time: the bindings' time.Duration since the
// epoch (and its "not a whole number of microseconds") cannot be reached.
func TestClock(t *testing.T) {
	f := newFrozen(t) // the server's clock stays at t0
	// The scripts take a caller clock within 60 s of the server's TIME.
	now := t0.Add(30 * time.Second)
	l := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithClock(func() time.Time { return now }))
	for i := 0; i < 10; i++ {
		l.Allow(ctx, "k")
	}
	if d, _ := l.Allow(ctx, "k"); d.Allowed {
		t.Fatal("an 11th request passed")
	}
	now = now.Add(100*time.Millisecond + 123*time.Nanosecond)
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Error("the caller clock moved 100 ms and no request passes")
	}
	// The server's clock is 30 s behind: the key's TTL covers that.
	if ttl := f.TTL(l.RedisKey("k")); ttl < 30*time.Second {
		t.Errorf("TTL %v, want over 30 s", ttl)
	}

	// A clock more than 60 s from the server's is the scripts' to refuse:
	// the error says it is the clock, and no fallback hides it.
	far := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithClock(func() time.Time { return t0.Add(time.Hour) }), ratelimit.WithFallback(ratelimit.FailOpen))
	if d, err := far.Allow(ctx, "far"); !errors.Is(err, ratelimit.ErrInvalid) || d.Allowed || d.Cause != nil {
		t.Errorf("a clock an hour ahead of the server's: %v, %v; want ErrInvalid, not allowed", d, err)
	}

	for _, bad := range []time.Time{time.Unix(-1, 0), time.UnixMicro(1 << 53), time.Unix(0, 0)} {
		bad := bad
		l := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithClock(func() time.Time { return bad }), ratelimit.WithFallback(ratelimit.FailOpen))
		if _, err := l.Allow(ctx, "clock"); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("clock %v: err = %v, want ErrInvalid (never a fallback)", bad, err)
		}
	}
	zero := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithClock(func() time.Time { return time.Time{} }))
	if d, err := zero.Allow(ctx, "zero"); err != nil || !d.Allowed {
		t.Errorf("a zero time.Time (the server's clock): %v, %v", d, err)
	}
}

func TestNamesKeepStateApart(t *testing.T) {
	f := newFrozen(t)
	a := newNamed(t, f.rdb, "a", ratelimit.GCRA)
	b := newNamed(t, f.rdb, "b", ratelimit.GCRA)
	p := newNamed(t, f.rdb, "a", ratelimit.GCRA, ratelimit.WithPrefix("app:limits:a:"))
	a.AllowN(ctx, "k", 10)
	for _, l := range []*ratelimit.Limiter{b, p} {
		if d, _ := l.Peek(ctx, "k"); d.Remaining != 10 {
			t.Errorf("%s sees a's state: %v", l.RedisKey("k"), d)
		}
	}
	if got := p.RedisKey("k"); got != "app:limits:a:{k}" {
		t.Errorf("RedisKey with a prefix = %q", got)
	}
}

// Foreign data under a key is an error and is never overwritten. (miniredis
// wraps the WRONGTYPE of a command inside a script in a plain ERR, so
// errors.Is(err, ErrWrongType), and that no fallback hides it, are
// checked on a real server: TestRealWrongType.)
func TestWrongType(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		f := newFrozen(t)
		l := newLimiter(t, f.rdb, alg)
		f.Lpush(l.RedisKey("k"), "not ours")
		d, err := l.Allow(ctx, "k")
		if err == nil || d.Allowed {
			t.Errorf("%v: %v, %v, want an error", alg, d, err)
		}
		if got, _ := f.List(l.RedisKey("k")); len(got) != 1 {
			t.Errorf("%v: the list is now %v", alg, got)
		}
	}
}

// The trap: two limiters built without a name shared
// rl:gcra:{key}, so 5 calls through PerMinute(100) made PerMinute(5) deny.
// A name is now New's second argument: limiters share state only when
// they are named alike, on purpose, and then share it whatever their
// limits (a plan change keeps the state, as the scripts promise).
func TestDifferentLimitsNeverShareState(t *testing.T) {
	f := newFrozen(t)
	api, err := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(100))
	if err != nil {
		t.Fatal(err)
	}
	login, err := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(5))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		api.Allow(ctx, "ip:192.0.2.1")
	}
	if d, err := login.Allow(ctx, "ip:192.0.2.1"); err != nil || !d.Allowed || d.Remaining != 4 {
		t.Errorf("5 calls through api, then login: %v, %v; want allowed, 4 of 5 left", d, err)
	}
	if api.RedisKey("k") == login.RedisKey("k") {
		t.Errorf("both keep k in %s", api.RedisKey("k"))
	}
	// Named alike on purpose: one state, whatever the limit.
	same, _ := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(1000))
	if d, _ := same.Peek(ctx, "ip:192.0.2.1"); d.Remaining != 995 {
		t.Errorf("api with a raised limit sees %v, want the 5 counted", d)
	}
	for _, name := range []string{"", "a:b", "a{b}", "é", string(make([]byte, 65))} {
		if _, err := ratelimit.New(f.rdb, name, ratelimit.PerMinute(5)); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("New(%q): %v, want ErrInvalid", name, err)
		}
	}
}

// Issue 15: a key that holds another script's state (or anyone's data of
// the right Redis type) is ErrBadState, not ErrWrongType, and no fallback
//
//	hides it; the key is left as it was.
func TestBadState(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		f := newFrozen(t)
		l := newNamed(t, f.rdb, alg.String(), alg, ratelimit.WithFallback(ratelimit.FailOpen))
		if err := f.Set(l.RedisKey("k"), "not ours"); err != nil {
			t.Fatal(err)
		}
		d, err := l.Allow(ctx, "k")
		want, other := bindings.ErrBadState, bindings.ErrWrongType
		if alg == ratelimit.SlidingWindowLog { // a sorted set: a string is another type
			want, other = other, want
		}
		if !errors.Is(err, want) || errors.Is(err, other) || errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed || d.Cause != nil {
			t.Errorf("%v: %v, %v; want %v alone", alg, d, err, want)
		}
		if got, _ := f.Get(l.RedisKey("k")); got != "not ours" {
			t.Errorf("%v: the key is now %q", alg, got)
		}
	}
}

// A limiter's key is its prefix and the caller's key as the whole {hash
// tag}: braces in the key cannot move the tag.
func TestRedisKeyEscapes(t *testing.T) {
	limiter, _ := ratelimit.New(newFrozen(t).rdb, "api", ratelimit.PerSecond(5))
	for key, want := range map[string]string{"user:42": "rl:api:{user:42}", "evil}{key": "rl:api:{evil%7D%7Bkey}"} {
		if got := limiter.RedisKey(key); got != want {
			t.Errorf("key %q: %s, want %s", key, got, want)
		}
	}
}
