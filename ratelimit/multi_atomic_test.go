package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

func mustLimiter(t *testing.T, rdb redis.Scripter, l ratelimit.Limit, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	lim, err := ratelimit.New(rdb, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// A Multi counts a request against every limit or none; AllowAll, over the
// same limiters, counts it against those that allowed it.
func TestMultiAllOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, atomic := range []bool{true, false} {
		f := newFrozen(t)
		sec := mustLimiter(t, f.rdb, ratelimit.PerSecond(2), ratelimit.WithName("sec"))
		hour := mustLimiter(t, f.rdb, ratelimit.PerHour(10), ratelimit.WithName("hour"))
		m, err := ratelimit.NewMulti(sec, hour)
		if err != nil {
			t.Fatal(err)
		}
		var passed int
		for i := 0; i < 5; i++ {
			var ds []ratelimit.Decision
			if atomic {
				ds, err = m.Allow(ctx, "u")
			} else {
				ds, err = ratelimit.AllowAll(ctx, "u", sec, hour)
			}
			if err != nil {
				t.Fatal(err)
			}
			if ds[0].Allowed && ds[1].Allowed {
				passed++
			}
		}
		d, _ := hour.Peek(ctx, "u")
		want := int64(10 - passed) // atomic: only what passed
		if !atomic {
			want = 10 - 5 // AllowAll: the hour counted every request
		}
		if passed != 2 || d.Remaining != want {
			t.Errorf("atomic %v: %d passed, the hour has %d left, want 2 and %d", atomic, passed, d.Remaining, want)
		}
	}
}

// A Multi and its limiters share state: what a limiter counts alone, the
// Multi sees, and the other way round.
func TestMultiSharesLimitersKeys(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	a := mustLimiter(t, f.rdb, ratelimit.PerSecond(3), ratelimit.WithName("a"))
	b := mustLimiter(t, f.rdb, ratelimit.PerMinute(3), ratelimit.WithName("b"))
	m, _ := ratelimit.NewMulti(a, b)
	if _, err := a.AllowN(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	ds, err := m.AllowN(ctx, "k", 2)
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Allowed || !ds[1].Allowed || ds[0].Remaining != 1 || ds[1].Remaining != 3 {
		t.Fatalf("after a alone counted 2 of 3: %v", ds)
	}
	if got := ratelimit.Strictest(ds); got != 0 {
		t.Errorf("Strictest = %d, want 0 (a denied)", got)
	}
	if _, err := m.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*ratelimit.Limiter{a, b} {
		d, _ := l.Peek(ctx, "k")
		if want := map[string]int64{"a": 0, "b": 2}[l.Name()]; d.Remaining != want {
			t.Errorf("%s: %d left, want %d", l.Name(), d.Remaining, want)
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

// Strictest names the limit that binds a denial: the longest wait, Never
// first, as multi.lua's own "denied" does.
func TestMultiStrictestIsTheBindingLimit(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	a := mustLimiter(t, f.rdb, ratelimit.PerSecond(1), ratelimit.WithName("a"))
	b := mustLimiter(t, f.rdb, ratelimit.PerMinute(1), ratelimit.WithName("b"))
	c := mustLimiter(t, f.rdb, ratelimit.PerSecond(3), ratelimit.WithName("c"))
	m, _ := ratelimit.NewMulti(a, b, c)
	m.Allow(ctx, "k")
	ds, _ := m.Allow(ctx, "k")
	if got := ratelimit.Strictest(ds); got != 1 || ds[1].RetryAfter != time.Minute || ds[0].RetryAfter != time.Second || !ds[2].Allowed {
		t.Errorf("Strictest %d of %v", got, ds)
	}
	ds, _ = m.AllowN(ctx, "k", 2)
	if got := ratelimit.Strictest(ds); got != 0 || ds[0].RetryAfter != ratelimit.Never || ds[1].RetryAfter != ratelimit.Never {
		t.Errorf("cost 2: Strictest %d of %v, want a (the first that can never pass)", got, ds)
	}
}

func TestNewMultiRefuses(t *testing.T) {
	f := newFrozen(t)
	other := newFrozen(t)
	g := func(name string, opts ...ratelimit.Option) *ratelimit.Limiter {
		return mustLimiter(t, f.rdb, ratelimit.PerSecond(5), append([]ratelimit.Option{ratelimit.WithName(name)}, opts...)...)
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
		"a fixed window":  {mustLimiter(t, f.rdb, ratelimit.PerSecond(5), ratelimit.WithName("w"), ratelimit.WithAlgorithm(ratelimit.FixedWindow))},
		"one prefix":      {g("a"), g("b", ratelimit.WithPrefix("rl:a:"))},
		"the same twice":  {g("a"), g("a")},
		"mixed clocks":    {g("a"), g("b", ratelimit.WithClock(time.Now))},
		"two clients":     {g("a"), mustLimiter(t, other.rdb, ratelimit.PerSecond(5), ratelimit.WithName("b"))},
		"another client":  {g("a"), mustLimiter(t, redis.NewClient(&redis.Options{Addr: f.Addr()}), ratelimit.PerSecond(5), ratelimit.WithName("b"))},
		"sixteen is fine": nil,
	} {
		if name == "sixteen is fine" {
			if _, err := ratelimit.NewMulti(many[:16]...); err != nil {
				t.Errorf("16 limiters: %v", err)
			}
			continue
		}
		if _, err := ratelimit.NewMulti(ls...); !errors.Is(err, ratelimit.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}

func TestMultiRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	m, _ := ratelimit.NewMulti(mustLimiter(t, f.rdb, ratelimit.PerSecond(5)))
	if _, err := m.AllowN(ctx, "k", 0); !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Errorf("n 0: %v", err)
	}
	if _, err := m.AllowN(ctx, "k", 1e9+1); !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Errorf("n 1e9+1: %v", err)
	}
	if _, err := m.Allow(ctx, ""); !errors.Is(err, ratelimit.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	far, _ := ratelimit.NewMulti(mustLimiter(t, f.rdb, ratelimit.PerSecond(5), ratelimit.WithClock(func() time.Time { return t0.Add(time.Hour) })))
	if _, err := far.Allow(ctx, "k"); !errors.Is(err, ratelimit.ErrClock) {
		t.Errorf("a clock an hour ahead: %v, want ErrClock (from the script)", err)
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("refused calls wrote %v", keys)
	}
}

// Each limiter's failure policy decides its own Decision when Redis is
// down; the request passes only if every one allows.
func TestMultiFailurePolicies(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	ctx := context.Background()
	open := mustLimiter(t, down, ratelimit.PerSecond(1), ratelimit.WithName("open"), ratelimit.OnFailure(ratelimit.FailOpen))
	closed := mustLimiter(t, down, ratelimit.PerSecond(1), ratelimit.WithName("closed"), ratelimit.OnFailure(ratelimit.FailClosed))
	strict := mustLimiter(t, down, ratelimit.PerSecond(1), ratelimit.WithName("strict"))

	m, _ := ratelimit.NewMulti(open, closed)
	ds, err := m.Allow(ctx, "k")
	if err != nil || !ds[0].Allowed || ds[1].Allowed || ds[0].Fallback != ratelimit.FailOpen || ds[1].Fallback != ratelimit.FailClosed {
		t.Errorf("open and closed: %v, %v", ds, err)
	}
	m, _ = ratelimit.NewMulti(open, strict)
	if _, err := m.Allow(ctx, "k"); err == nil {
		t.Error("a limiter without a policy: no error")
	}
}

// The middleware checks a *Multi atomically, also when a tier picks it,
// and reports every policy.
func TestMiddlewareMulti(t *testing.T) {
	f := newFrozen(t)
	sec := mustLimiter(t, f.rdb, ratelimit.PerSecond(1), ratelimit.WithName("sec"))
	day := mustLimiter(t, f.rdb, ratelimit.PerDay(5), ratelimit.WithName("day"))
	m, _ := ratelimit.NewMulti(sec, day)
	tiers := ratelimit.Tiers{Tier: func(*http.Request) string { return "any" }, Rules: map[string]ratelimit.Rule{"any": m}}
	for name, rule := range map[string]ratelimit.Rule{"multi": m, "tier": tiers, "tier pointer": &tiers} {
		t.Run(name, func(t *testing.T) {
			h := ratelimit.Middleware(rule, ratelimit.ByHeader("X-User"))(okHandler)
			var codes []int
			for i := 0; i < 4; i++ {
				rec := serve(h, get("192.0.2.1:1", "X-User", name))
				codes = append(codes, rec.Code)
				if p := rec.Header().Get("RateLimit-Policy"); p != `"sec";q=1;w=1, "day";q=5;w=86400` {
					t.Errorf("RateLimit-Policy %q", p)
				}
				if i > 0 {
					if p := problemOf(t, rec); !cmp.Equal(p.ViolatedPolicies, []string{"sec"}) {
						t.Errorf("violated %v", p.ViolatedPolicies)
					}
				}
			}
			if !cmp.Equal(codes, []int{200, 429, 429, 429}) {
				t.Errorf("codes %v", codes)
			}
			// Three denials by the second's limit spent none of the day's.
			if d, _ := day.Peek(context.Background(), "header:x-user:"+name); d.Remaining != 4 {
				t.Errorf("day: %d left, want 4", d.Remaining)
			}
			rec := serve(h, get("192.0.2.1:1", "X-User", name))
			if got := rec.Header().Get("RateLimit"); !strings.Contains(got, `"day";r=4;`) {
				t.Errorf("RateLimit %q", got)
			}
		})
	}
}

// A Multi's round trip is bounded by the shortest timeout among its
// limiters, each limiter's failure policy decides for it, and each
// limiter's hook sees its own decision.
func TestMultiTimeoutAndHooks(t *testing.T) {
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
	sec := mustLimiter(t, f.rdb, ratelimit.PerSecond(1), ratelimit.WithName("sec"), hook("sec"))
	perMin := mustLimiter(t, f.rdb, ratelimit.PerMinute(5), ratelimit.WithName("min"))
	day := mustLimiter(t, f.rdb, ratelimit.PerDay(9), ratelimit.WithName("day"), hook("day"))
	m, err := ratelimit.NewMulti(sec, perMin, day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Allow(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Peek(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d hook events, want 4 (two hooked limiters, two calls): %+v", len(events), events)
	}
	for i, want := range []struct {
		limiter *ratelimit.Limiter
		cost    int64
		allowed bool
	}{{sec, 1, true}, {day, 1, true}, {sec, 0, false}, {day, 0, true}} {
		e := events[i].e
		if e.Limiter != want.limiter || events[i].limiter != want.limiter.Name() || e.Key != "u" || e.Cost != want.cost ||
			e.Decision.Allowed != want.allowed || e.Err != nil || e.Duration <= 0 {
			t.Errorf("event %d: %s %+v, want %s cost %d allowed %v", i, events[i].limiter, e, want.limiter.Name(), want.cost, want.allowed)
		}
	}

	// A hung server: the call ends at the timeout of the limiter that has
	// one, not at go-redis's 3 s.
	events = nil
	addr, stop := hungServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	const timeout = 100 * time.Millisecond
	const slack = 900 * time.Millisecond // a loaded machine; far below 3 s
	strict := mustLimiter(t, rdb, ratelimit.PerSecond(1), ratelimit.WithName("strict"), ratelimit.WithTimeout(timeout), hook("strict"))
	closed := mustLimiter(t, rdb, ratelimit.PerDay(9), ratelimit.WithName("closed"), ratelimit.OnFailure(ratelimit.FailClosed), hook("closed"))
	hung, err := ratelimit.NewMulti(strict, closed)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ds, err := hung.Allow(ctx, "u")
	if took := time.Since(start); took < timeout || took > timeout+slack {
		t.Errorf("the Multi took %v with a timeout of %v", took, timeout)
	}
	if !errors.Is(err, ratelimit.ErrTimeout) {
		t.Errorf("error %v, want ErrTimeout (strict has no failure policy)", err)
	}
	if len(ds) != 2 || ds[1].Allowed || ds[1].Fallback != ratelimit.FailClosed || !errors.Is(ds[1].Cause, ratelimit.ErrTimeout) {
		t.Errorf("decisions %+v, want the second by FailClosed for ErrTimeout", ds)
	}
	if len(events) != 2 || !errors.Is(events[0].e.Err, ratelimit.ErrTimeout) || events[1].e.Err != nil || events[1].e.Decision.Fallback != ratelimit.FailClosed {
		t.Errorf("hook events %+v", events)
	}
	stop()
	rdb.Close()
}
