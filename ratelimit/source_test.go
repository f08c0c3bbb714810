package ratelimit_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// WithHook given several times calls every hook, in the order given, with
// the same Event, in the limiter and in its WithLimit copies; a nil hook
// adds none.
func TestSeveralHooks(t *testing.T) {
	f := newFrozen(t)
	var order []string
	var events []ratelimit.Event
	hook := func(name string) ratelimit.Option {
		return ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
			order = append(order, name)
			events = append(events, e)
		})
	}
	l, err := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(10), hook("log"), ratelimit.WithHook(nil), hook("metrics"))
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "k")
	plan, _ := l.WithLimit(ratelimit.PerMinute(100))
	plan.Allow(ctx, "k")
	if got := strings.Join(order, " "); got != "log metrics log metrics" {
		t.Fatalf("hooks called: %q, want %q", got, "log metrics log metrics")
	}
	for i := 0; i < len(events); i += 2 {
		a, b := events[i], events[i+1]
		if a.Name != b.Name || a.Key != b.Key || a.Duration != b.Duration || a.Decision.String() != b.Decision.String() {
			t.Errorf("the hooks of one decision saw %+v and %+v", a, b)
		}
	}
	// The rule that decided: one name for a Select's plans, their limits
	// apart.
	if events[0].Decision.Limit != ratelimit.PerMinute(10) || events[2].Decision.Limit != ratelimit.PerMinute(100) {
		t.Errorf("the plans' events: %v and %v", events[0].Decision.Limit, events[2].Decision.Limit)
	}
}

// Every stage that decides names itself in Decision.Source, which the
// hook's Event carries; the zero Fallback never says "none".
func TestDecisionSource(t *testing.T) {
	f := newFrozen(t)
	var sources []string
	hook := ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { sources = append(sources, e.Decision.Source) })
	check := func(what string, d ratelimit.Decision, err error, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d.Source != want || sources[len(sources)-1] != want {
			t.Errorf("%s: %v, source %q, event's %q, want %q", what, d, d.Source, sources[len(sources)-1], want)
		}
		if d.Source == "redis" && (d.Fallback.String() != "" || strings.Contains(d.String(), "none")) {
			t.Errorf("%s: Redis decided, yet Fallback reads %q and the Decision %q", what, d.Fallback, d)
		}
	}
	api, _ := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(1), ratelimit.WithDenyCache(10), hook)
	d, err := api.Allow(ctx, "k")
	check("an admission", d, err, "redis")
	d, err = api.Allow(ctx, "k")
	check("a denial", d, err, "redis")
	d, err = api.Allow(ctx, "k")
	check("a cached denial", d, err, "deny-cache")

	guard, _ := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(1), ratelimit.WithLockout(time.Hour), hook)
	d, err = guard.Allow(ctx, "k")
	check("the request that starts a lockout", d, err, "redis")
	if !d.LockedOut {
		t.Errorf("the request that starts a lockout: %v, want LockedOut", d)
	}
	d, err = guard.Peek(ctx, "k")
	check("a lockout's denial", d, err, "lockout")
	if !d.LockedOut {
		t.Errorf("a lockout's denial: %v, want LockedOut", d)
	}

	// The deny cache keeps a lockout's denial, and says it is one.
	cachedGuard, _ := ratelimit.New(f.rdb, "login2", ratelimit.PerMinute(1), ratelimit.WithLockout(time.Hour), ratelimit.WithDenyCache(10), hook)
	cachedGuard.Allow(ctx, "k")
	d, err = cachedGuard.Allow(ctx, "k")
	check("a lockout's denial", d, err, "lockout")
	d, err = cachedGuard.Allow(ctx, "k")
	check("a lockout's denial, cached", d, err, "deny-cache")
	if !d.LockedOut || !d.Cached {
		t.Errorf("a lockout's denial, cached: %v, want LockedOut", d)
	}

	down := downClient(t)
	for _, fb := range []ratelimit.Fallback{ratelimit.FailOpen, ratelimit.FailClosed, ratelimit.FailLocal(1)} {
		l, _ := ratelimit.New(down, "down", ratelimit.PerMinute(1), ratelimit.WithFallback(fb), hook)
		d, err := l.Allow(ctx, "k")
		check(fb.String(), d, err, fb.String())
	}
	if s := (ratelimit.Fallback{}).String(); s != "" {
		t.Errorf("the zero Fallback reads %q, want \"\"", s)
	}

	// All and Atomic: each part, and each Event, names its own.
	a, _ := ratelimit.New(f.rdb, "a", ratelimit.PerMinute(5), hook)
	b, _ := ratelimit.New(f.rdb, "b", ratelimit.PerMinute(5), hook)
	atomic, err := ratelimit.Atomic(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []ratelimit.Rule{mustAll(t, a, b), atomic} {
		sources = nil
		d, err := r.Allow(ctx, "k")
		if err != nil || len(d.Parts) != 2 || d.Parts[0].Source != "redis" || d.Parts[1].Source != "redis" || strings.Join(sources, " ") != "redis redis" {
			t.Errorf("%v: parts %v, events' sources %q, %v", d, d.Parts, sources, err)
		}
	}
}

// A request that waited for a call in flight on its key and went to Redis
// in the batch after it says so ("redis-batch"); the one in flight says
// "redis".
func TestDecisionSourceBatch(t *testing.T) {
	f := newFrozen(t)
	g := newGate(t, f.rdb, f.rdb)
	var mu sync.Mutex
	events := map[string]int{}
	l, _ := ratelimit.New(g, "c", ratelimit.PerMinute(10), ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
		mu.Lock()
		events[e.Decision.Source]++
		mu.Unlock()
	}))
	g.hold()
	var wg sync.WaitGroup
	ds := make([]ratelimit.Decision, 4)
	for i := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if ds[i], err = l.Allow(ctx, "k"); err != nil {
				t.Error(err)
			}
		}()
		if i == 0 {
			g.waitArrived(t, 1)
		}
	}
	queued(t, l, "k", 3)
	g.release()
	wg.Wait()
	got := map[string]int{}
	for _, d := range ds {
		got[d.Source]++
	}
	if got["redis"] != 1 || got["redis-batch"] != 3 || events["redis"] != 1 || events["redis-batch"] != 3 {
		t.Errorf("sources %v, events' %v; want 1 redis and 3 redis-batch", got, events)
	}
}

// A locked-out Decision says so in its String.
func TestLockedOutString(t *testing.T) {
	f := newFrozen(t)
	guard, _ := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(1), ratelimit.WithLockout(time.Hour))
	if d := allow(t, guard); d.String() != "allowed, now locked out, 0 of 1 left, full in 1h0m0s" {
		t.Errorf("the request that starts a lockout: %q", d)
	}
	if d := allow(t, guard); d.String() != "denied, locked out, 0 of 1 left, retry in 1h0m0s, full in 1h0m0s" {
		t.Errorf("a lockout's denial: %q", d)
	}
}
