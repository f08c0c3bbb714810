package ratelimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/ratelimit"
)

// FailLocal keeps limiting while Redis is down: share of the limit, in
// this process, with waits of its own.
func TestFailLocal(t *testing.T) {
	now := t0
	clock := ratelimit.WithClock(func() time.Time { return now })
	share := ratelimit.FailLocal(0.5)
	l, err := ratelimit.New(downClient(t), "api", ratelimit.PerSecond(10), ratelimit.WithFallback(share), clock)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 7; i++ {
		d, err := l.Allow(ctx, "k")
		if err != nil || d.Fallback != share || !errors.Is(d.Cause, ratelimit.ErrUnavailable) || d.Name != "api" || d.Limit != ratelimit.PerSecond(5) {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
		got = append(got, d.Allowed)
		if i == 6 && d.RetryAfter != 200*time.Millisecond {
			t.Errorf("denied with RetryAfter %v, want 200ms (5 a second)", d.RetryAfter)
		}
	}
	if want := []bool{true, true, true, true, true, false, false}; !cmp.Equal(got, want) {
		t.Errorf("decisions %v, want half of the burst of 10", got)
	}
	if d, _ := l.Peek(ctx, "k"); d.Allowed || d.Remaining != 0 {
		t.Errorf("peek %v", d)
	}
	now = now.Add(200 * time.Millisecond)
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Errorf("after its RetryAfter: %v", d)
	}
	if d, _ := l.Allow(ctx, "other"); !d.Allowed || d.Remaining != 4 {
		t.Errorf("another key: %v", d)
	}
	if d, _ := l.AllowN(ctx, "k", 6); d.Allowed || d.RetryAfter != ratelimit.Never {
		t.Errorf("a cost above the local burst: %v", d)
	}
	// A copy with another limit keeps the in-memory state too.
	pro, _ := l.WithLimit(ratelimit.PerSecond(100))
	if d, _ := pro.Allow(ctx, "k"); !d.Allowed || d.Limit != ratelimit.PerSecond(50) {
		t.Errorf("a raised limit: %v", d)
	}
	// Errors that are no outage are never decided locally.
	bad, _ := ratelimit.New(downClient(t), "api", ratelimit.PerSecond(10), ratelimit.WithFallback(share),
		ratelimit.WithClock(func() time.Time { return time.Unix(0, 0) }))
	if _, err := bad.Allow(ctx, "k"); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a bad clock: %v", err)
	}
	for _, s := range []float64{0, -1, 1.01} {
		if _, err := ratelimit.New(downClient(t), "api", ratelimit.PerSecond(10), ratelimit.WithFallback(ratelimit.FailLocal(s))); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("share %v: %v", s, err)
		}
	}
}

// An Atomic rule's limiters that fail locally decide all or nothing, as the
// script does: a request one denies counts in none.
func TestFailLocalMultiIsAtomic(t *testing.T) {
	now := t0
	clock := ratelimit.WithClock(func() time.Time { return now })
	rdb := downClient(t)
	sec, _ := ratelimit.New(rdb, "sec", ratelimit.PerSecond(2), ratelimit.WithFallback(ratelimit.FailLocal(1)), clock)
	hour, _ := ratelimit.New(rdb, "hour", ratelimit.Per(3, time.Hour), ratelimit.WithFallback(ratelimit.FailLocal(1)), clock)
	m, err := ratelimit.Atomic(sec, hour)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, step := range []time.Duration{0, 0, 0, time.Second, time.Second} {
		now = now.Add(step)
		d, err := m.AllowN(ctx, "k", 1)
		if err != nil || len(d.Parts) != 2 || d.Cause == nil {
			t.Fatalf("%+v, %v", d, err)
		}
		got = append(got, d.Allowed)
	}
	// The third is denied by sec and so not counted by hour: hour has one
	// left for the fourth, none for the fifth.
	if want := []bool{true, true, false, true, false}; !cmp.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	// One that fails open and one that fails locally: the local one counts
	// only what the open one lets through (all of it).
	open, _ := ratelimit.New(rdb, "open", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailOpen), clock)
	closed, _ := ratelimit.New(rdb, "closed", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailClosed), clock)
	local, _ := ratelimit.New(rdb, "local", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailLocal(1)), clock)
	mc, _ := ratelimit.Atomic(closed, local)
	for i := 0; i < 3; i++ {
		if d, _ := mc.AllowN(ctx, "j", 1); d.Allowed {
			t.Errorf("with one that fails closed: %v", d)
		}
	}
	mo, _ := ratelimit.Atomic(open, local)
	if d, _ := mo.AllowN(ctx, "j", 1); !d.Allowed {
		t.Errorf("the closed one's denials were counted locally: %v", d)
	}
}

// Reset forgets a key's in-memory state too: after an outage that used
// the key's local share up, a Reset gives it a full local burst, whether
// or not Redis answered the DEL.
func TestResetForgetsLocalState(t *testing.T) {
	now := t0
	l, err := ratelimit.New(downClient(t), "api", ratelimit.Per(2, time.Hour), ratelimit.WithFallback(ratelimit.FailLocal(1)),
		ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if d, _ := l.Allow(ctx, "k"); d.Allowed != (i < 2) {
			t.Fatalf("request %d while down: %v", i, d)
		}
	}
	if err := l.Reset(ctx, "k"); !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Errorf("Reset on a dead server: %v, want ErrUnavailable", err)
	}
	if d, _ := l.Allow(ctx, "k"); !d.Allowed || d.Remaining != 1 {
		t.Errorf("after Reset: %v, want a full local burst (1 of 2 left)", d)
	}
	if d, _ := l.Allow(ctx, "other"); !d.Allowed {
		t.Errorf("another key: %v", d)
	}
}
