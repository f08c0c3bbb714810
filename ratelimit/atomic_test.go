package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

func mustLimiter(t *testing.T, rdb ratelimit.Client, name string, l ratelimit.Limit, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	lim, err := ratelimit.New(rdb, name, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// An Atomic rule counts a request against every limit or none; All, over the same
// limiters, counts it against those that allowed it.
func TestAtomicAllOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, atomic := range []bool{true, false} {
		f := newFrozen(t)
		sec := mustLimiter(t, f.rdb, "sec", ratelimit.PerSecond(2))
		hour := mustLimiter(t, f.rdb, "hour", ratelimit.Per(10, time.Hour))
		m, err := ratelimit.Atomic(sec, hour)
		if err != nil {
			t.Fatal(err)
		}
		var rule ratelimit.Rule = m
		if !atomic {
			rule = mustAll(t, sec, hour)
		}
		var passed int
		for i := 0; i < 5; i++ {
			d, err := rule.AllowN(ctx, "u", 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != (d.Parts[0].Allowed && d.Parts[1].Allowed) {
				t.Fatalf("%v with parts %v", d, d.Parts)
			}
			if d.Allowed {
				passed++
			}
		}
		d, _ := hour.Peek(ctx, "u")
		want := int64(10 - passed) // atomic: only what passed
		if !atomic {
			want = 10 - 5 // All: the hour counted every request
		}
		if passed != 2 || d.Remaining != want {
			t.Errorf("atomic %v: %d passed, the hour has %d left, want 2 and %d", atomic, passed, d.Remaining, want)
		}
	}
}

// An Atomic rule and its limiters share state: what a limiter counts
// alone, the rule sees, and the other way round.
func TestAtomicSharesLimitersKeys(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	a := mustLimiter(t, f.rdb, "a", ratelimit.PerSecond(3))
	b := mustLimiter(t, f.rdb, "b", ratelimit.PerMinute(3))
	m, _ := ratelimit.Atomic(a, b)
	if _, err := a.AllowN(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	d, err := m.AllowN(ctx, "k", 2)
	if err != nil {
		t.Fatal(err)
	}
	if ds := d.Parts; ds[0].Allowed || !ds[1].Allowed || ds[0].Remaining != 1 || ds[1].Remaining != 3 {
		t.Fatalf("after a alone counted 2 of 3: %v", ds)
	}
	if d.Name != "a" || d.Allowed {
		t.Errorf("binding %q, want a (a denied)", d.Name)
	}
	if _, err := m.AllowN(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*ratelimit.Limiter{a, b} {
		d, _ := l.Peek(ctx, "k")
		if want := map[string]int64{"a": 0, "b": 2}[d.Name]; d.Remaining != want {
			t.Errorf("%s: %d left, want %d", d.Name, d.Remaining, want)
		}
	}
	// Peek counts nothing.
	for i := 0; i < 3; i++ {
		if _, err := m.Peek(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := b.Peek(ctx, "k"); d.Remaining != 2 {
		t.Errorf("b after peeks: %d left, want 2", d.Remaining)
	}
}

// The Decision reads as the limit that binds a denial: the longest wait,
// Never first, as multi.lua's own "denied" does.
func TestAtomicBindingLimit(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	a := mustLimiter(t, f.rdb, "a", ratelimit.PerSecond(1))
	b := mustLimiter(t, f.rdb, "b", ratelimit.PerMinute(1))
	c := mustLimiter(t, f.rdb, "c", ratelimit.PerSecond(3))
	m, _ := ratelimit.Atomic(a, b, c)
	m.AllowN(ctx, "k", 1)
	d, _ := m.AllowN(ctx, "k", 1)
	ds := d.Parts
	if d.Name != "b" || d.Allowed || d.RetryAfter != time.Minute || ds[1].RetryAfter != time.Minute || ds[0].RetryAfter != time.Second || !ds[2].Allowed {
		t.Errorf("binding %q of %v", d.Name, ds)
	}
	d, _ = m.AllowN(ctx, "k", 2)
	ds = d.Parts
	if d.Name != "a" || d.RetryAfter != ratelimit.Never || ds[0].RetryAfter != ratelimit.Never || ds[1].RetryAfter != ratelimit.Never {
		t.Errorf("cost 2: binding %q of %v, want a (the first that can never pass)", d.Name, ds)
	}
}

func TestAtomicRefuses(t *testing.T) {
	f := newFrozen(t)
	other := newFrozen(t)
	g := func(name string, opts ...ratelimit.Option) *ratelimit.Limiter {
		return mustLimiter(t, f.rdb, name, ratelimit.PerSecond(5), opts...)
	}
	many := make([]*ratelimit.Limiter, 17)
	for i := range many {
		many[i] = g("l" + string(rune('a'+i)))
	}
	for name, ls := range map[string][]*ratelimit.Limiter{
		"none":            nil,
		"17":              many,
		"a nil":           {g("a"), nil},
		"a token bucket":  {g("a"), g("b", ratelimit.WithAlgorithm(ratelimit.TokenBucket))},
		"a fixed window":  {mustLimiter(t, f.rdb, "w", ratelimit.PerSecond(5), ratelimit.WithAlgorithm(ratelimit.FixedWindow))},
		"one prefix":      {g("a"), g("b", ratelimit.WithPrefix("rl:a:"))},
		"the same twice":  {g("a"), g("a")},
		"mixed clocks":    {g("a"), g("b", ratelimit.WithClock(time.Now))},
		"a lockout":       {g("a"), g("b", ratelimit.WithLockout(time.Minute))},
		"two clients":     {g("a"), mustLimiter(t, other.rdb, "b", ratelimit.PerSecond(5))},
		"another client":  {g("a"), mustLimiter(t, redis.NewClient(&redis.Options{Addr: f.Addr()}), "b", ratelimit.PerSecond(5))},
		"sixteen is fine": nil,
	} {
		if name == "sixteen is fine" {
			if _, err := ratelimit.Atomic(many[:16]...); err != nil {
				t.Errorf("16 limiters: %v", err)
			}
			continue
		}
		if _, err := ratelimit.Atomic(ls...); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestAtomicRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	m, _ := ratelimit.Atomic(mustLimiter(t, f.rdb, "m", ratelimit.PerSecond(5)))
	if _, err := m.AllowN(ctx, "k", 0); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("n 0: %v", err)
	}
	if _, err := m.AllowN(ctx, "k", 1e9+1); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("n 1e9+1: %v", err)
	}
	if _, err := m.AllowN(ctx, "", 1); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("empty key: %v", err)
	}
	far, _ := ratelimit.Atomic(mustLimiter(t, f.rdb, "m", ratelimit.PerSecond(5), ratelimit.WithClock(func() time.Time { return t0.Add(time.Hour) })))
	if _, err := far.AllowN(ctx, "k", 1); !errors.Is(err, ratelimit.ErrInvalid) || !errors.Is(err, bindings.ErrBadArg) {
		t.Errorf("a clock an hour ahead: %v, want ErrInvalid (from the script)", err)
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("refused calls wrote %v", keys)
	}
}

// Each limiter's fallback decides its own Decision when Redis is
// down; the request passes only if every one allows.
func TestAtomicFallbacks(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	ctx := context.Background()
	open := mustLimiter(t, down, "open", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailOpen))
	closed := mustLimiter(t, down, "closed", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailClosed))
	strict := mustLimiter(t, down, "strict", ratelimit.PerSecond(1))

	m, _ := ratelimit.Atomic(open, closed)
	d, err := m.AllowN(ctx, "k", 1)
	if ds := d.Parts; err != nil || d.Allowed || !ds[0].Allowed || ds[1].Allowed || ds[0].Fallback != ratelimit.FailOpen || ds[1].Fallback != ratelimit.FailClosed {
		t.Errorf("open and closed: %v, %v", d, err)
	}
	m, _ = ratelimit.Atomic(open, strict)
	if _, err := m.AllowN(ctx, "k", 1); !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Errorf("a limiter without a policy: %v, want ErrUnavailable", err)
	}
}

// An Atomic rule's round trip is bounded by the shortest timeout among its
// limiters, each limiter's fallback decides for it, and each
// limiter's hook sees its own decision.
func TestAtomicTimeoutAndHooks(t *testing.T) {
	type seen struct {
		limiter string
		e       ratelimit.Event
	}
	var events []seen
	hook := func(name string) ratelimit.Option {
		return ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { events = append(events, seen{name, e}) })
	}

	// An ordinary call: one event per hooked limiter, in order.
	f := newFrozen(t)
	sec := mustLimiter(t, f.rdb, "sec", ratelimit.PerSecond(1), hook("sec"))
	perMin := mustLimiter(t, f.rdb, "min", ratelimit.PerMinute(5))
	day := mustLimiter(t, f.rdb, "day", ratelimit.Per(9, 24*time.Hour), hook("day"))
	m, err := ratelimit.Atomic(sec, perMin, day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AllowN(ctx, "u", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Peek(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d hook events, want 4 (two hooked limiters, two calls): %+v", len(events), events)
	}
	for i, want := range []struct {
		name    string
		cost    int64
		allowed bool
	}{{"sec", 1, true}, {"day", 1, true}, {"sec", 0, false}, {"day", 0, true}} {
		e := events[i].e
		if e.Name != want.name || events[i].limiter != want.name || e.Decision.Name != want.name || e.Key != "u" || e.Cost != want.cost ||
			e.Decision.Allowed != want.allowed || e.Err != nil || e.Duration <= 0 {
			t.Errorf("event %d: %s %+v, want %s cost %d allowed %v", i, events[i].limiter, e, want.name, want.cost, want.allowed)
		}
	}

	// A hung server: the call ends at the timeout of the limiter that has
	// one, not at go-redis's 3 s.
	events = nil
	addr, stop := hungServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	const timeout = 100 * time.Millisecond
	const slack = 900 * time.Millisecond // a loaded machine; far below 3 s
	strict := mustLimiter(t, rdb, "strict", ratelimit.PerSecond(1), ratelimit.WithTimeout(timeout), hook("strict"))
	closed := mustLimiter(t, rdb, "closed", ratelimit.Per(9, 24*time.Hour), ratelimit.WithFallback(ratelimit.FailClosed), hook("closed"))
	hung, err := ratelimit.Atomic(strict, closed)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := hung.AllowN(ctx, "u", 1)
	ds := d.Parts
	if took := time.Since(start); took < timeout || took > timeout+slack {
		t.Errorf("the Atomic rule took %v with a timeout of %v", took, timeout)
	}
	if !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Errorf("error %v, want ErrUnavailable (strict has no fallback)", err)
	}
	if len(ds) != 2 || ds[1].Allowed || ds[1].Fallback != ratelimit.FailClosed || !errors.Is(ds[1].Cause, ratelimit.ErrUnavailable) {
		t.Errorf("decisions %+v, want the second by FailClosed for ErrUnavailable", ds)
	}
	if len(events) != 2 || !errors.Is(events[0].e.Err, ratelimit.ErrUnavailable) || events[1].e.Err != nil || events[1].e.Decision.Fallback != ratelimit.FailClosed {
		t.Errorf("hook events %+v", events)
	}
	stop()
	rdb.Close()
}
