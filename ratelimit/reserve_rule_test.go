package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// remaining is what key has left in l, by a peek.
func remaining(t *testing.T, l *ratelimit.Limiter, key string) int64 {
	t.Helper()
	d, err := l.Peek(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return d.Remaining
}

// Atomic reserves in every limit, all or nothing, and settles each.
func TestReserveAtomic(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	minute, _ := ratelimit.New(f.rdb, "minute", ratelimit.PerMinute(10))
	hour, _ := ratelimit.New(f.rdb, "hour", ratelimit.Per(5, time.Hour))
	both, err := ratelimit.Atomic(minute, hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := both.Reserve(ctx, "k", 3)
	if err != nil || !r.Decision.Allowed || len(r.Decision.Parts) != 2 {
		t.Fatalf("Reserve(3) = %v, %v; want allowed in both", r.Decision, err)
	}
	if err := r.Settle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if m, h := remaining(t, minute, "k"), remaining(t, hour, "k"); m != 9 || h != 4 {
		t.Errorf("after Settle(1) of 3: %d and %d left, want 9 and 4", m, h)
	}
	// 5 more pass the minute but not the hour: nothing is counted.
	denied, err := both.Reserve(ctx, "k", 5)
	if err != nil || denied.Decision.Allowed {
		t.Fatalf("Reserve(5) with 4 left in the hour = %v, %v; want denied", denied.Decision, err)
	}
	if err := denied.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if m, h := remaining(t, minute, "k"), remaining(t, hour, "k"); m != 9 || h != 4 {
		t.Errorf("after a denied reservation: %d and %d left, want 9 and 4", m, h)
	}
}

// All reserves in each rule that has room, as AllowN counts, even when
// another denies; Cancel gives back what was counted.
func TestReserveAll(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	wide, _ := ratelimit.New(f.rdb, "wide", ratelimit.PerMinute(10))
	narrow, _ := ratelimit.New(f.rdb, "narrow", ratelimit.PerMinute(2))
	rule, err := ratelimit.All(wide, narrow)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rule.Reserve(ctx, "k", 2)
	if err != nil || !r.Decision.Allowed {
		t.Fatalf("Reserve(2) = %v, %v; want allowed", r.Decision, err)
	}
	if err := r.Settle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if w, n := remaining(t, wide, "k"), remaining(t, narrow, "k"); w != 9 || n != 1 {
		t.Errorf("after Settle(1) of 2: %d and %d left, want 9 and 1", w, n)
	}
	denied, err := rule.Reserve(ctx, "k", 2)
	if err != nil || denied.Decision.Allowed {
		t.Fatalf("Reserve(2) with 1 left in narrow = %v, %v; want denied", denied.Decision, err)
	}
	if w := remaining(t, wide, "k"); w != 7 {
		t.Errorf("a denied All reservation counted %d in wide, want 2 (as AllowN counts)", 9-w)
	}
	if err := denied.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if w, n := remaining(t, wide, "k"), remaining(t, narrow, "k"); w != 9 || n != 1 {
		t.Errorf("after cancelling the denied reservation: %d and %d left, want 9 and 1", w, n)
	}
}

// Select reserves with the rule it chooses; Unlimited holds nothing.
func TestReserveSelect(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	free, _ := ratelimit.New(f.rdb, "plan", ratelimit.PerMinute(3))
	plans := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
		if key == "admin" {
			return ratelimit.Unlimited, nil
		}
		return free, nil
	})
	r, err := plans.Reserve(ctx, "k", 2)
	if err != nil || !r.Decision.Allowed || r.Decision.Remaining != 1 {
		t.Fatalf("Reserve(2) of 3 = %v, %v", r.Decision, err)
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if n := remaining(t, free, "k"); n != 3 {
		t.Errorf("after Cancel: %d left, want 3", n)
	}
	u, err := plans.Reserve(ctx, "admin", 1e9)
	if err != nil || !u.Decision.Allowed {
		t.Fatalf("Unlimited's Reserve = %v, %v", u.Decision, err)
	}
	if err := u.Settle(ctx, 5); err != nil {
		t.Errorf("Unlimited's Settle: %v", err)
	}
	if _, err := plans.Reserve(ctx, "k", 0); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Reserve(0): %v, want ErrInvalid", err)
	}
}

// With a lockout, the reservation that uses the limit up starts it, and
// giving that reservation back lifts it: a right password on the last
// attempt locks nobody out.
func TestReserveLockout(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	guard, err := ratelimit.New(f.rdb, "login", ratelimit.Per(3, time.Minute), ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r, err := guard.Reserve(ctx, "k", 1); err != nil || !r.Decision.Allowed || r.Decision.LockedOut {
			t.Fatalf("failure %d: %v, %v", i+1, r.Decision, err)
		}
	}
	last, err := guard.Reserve(ctx, "k", 1)
	if err != nil || !last.Decision.Allowed || !last.Decision.LockedOut || last.Decision.ResetAfter != time.Hour {
		t.Fatalf("the third = %v, %v; want allowed, starting the lockout", last.Decision, err)
	}
	if d, _ := guard.Peek(ctx, "k"); d.Allowed || !d.LockedOut {
		t.Fatalf("after the third: %v, want locked out", d)
	}
	if err := last.Cancel(ctx); err != nil { // the password was right
		t.Fatal(err)
	}
	d, err := guard.Peek(ctx, "k")
	if err != nil || !d.Allowed || d.LockedOut || d.Remaining != 1 {
		t.Fatalf("after giving the third back: %v, %v; want allowed, 1 left, no lockout", d, err)
	}
	// A failure uses it up again and the lockout holds, however the limit
	// refills.
	if r, _ := guard.Reserve(ctx, "k", 1); !r.Decision.LockedOut {
		t.Fatalf("the third failure again: %v, want the lockout started", r.Decision)
	}
	f.advance(time.Minute)
	if d, _ := guard.Allow(ctx, "k"); d.Allowed || !d.LockedOut {
		t.Errorf("a minute on: %v, want locked out", d)
	}
}

// A settle over several limits that fails midway settles the rest and
// names the limits it did not settle.
func TestReserveSettleFailsMidway(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	other := newFrozen(t)
	here, _ := ratelimit.New(f.rdb, "here", ratelimit.PerMinute(10))
	there, _ := ratelimit.New(other.rdb, "there", ratelimit.PerMinute(10))
	rule, _ := ratelimit.All(there, here)
	r, err := rule.Reserve(ctx, "k", 4)
	if err != nil || !r.Decision.Allowed {
		t.Fatalf("Reserve(4) = %v, %v", r.Decision, err)
	}
	other.Close()
	err = r.Cancel(ctx)
	if !errors.Is(err, ratelimit.ErrUnavailable) || !strings.Contains(err.Error(), "not settled in there (settled in here)") {
		t.Fatalf("Cancel with one server down = %v, want ErrUnavailable naming there", err)
	}
	if n := remaining(t, here, "k"); n != 10 {
		t.Errorf("the limit on the server up: %d left, want 10 (given back)", n)
	}
}
