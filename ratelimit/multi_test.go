package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// countingHook counts what go-redis sends: single commands and pipelines.
type countingHook struct {
	mu                  sync.Mutex
	single, pipes, cmds int
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.single++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.pipes++
		h.cmds += len(cmds)
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func TestAllowAllIsOneRoundTrip(t *testing.T) {
	f := newFrozen(t)
	var limiters []*ratelimit.Limiter
	for _, alg := range ratelimit.Algorithms() {
		limiters = append(limiters, newLimiter(t, f.rdb, alg))
	}
	if err := ratelimit.Load(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	f.rdb.AddHook(h)
	for i := 0; i < 12; i++ {
		ds, err := ratelimit.AllowAll(ctx, "k", limiters...)
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range ds {
			if d.Allowed != (i < 10) {
				t.Fatalf("request %d, %v: %v", i, limiters[j].Algorithm(), d)
			}
		}
	}
	if h.single != 0 || h.pipes != 12 || h.cmds != 12*len(limiters) {
		t.Errorf("12 AllowAll of %d limiters sent %d commands and %d pipelines of %d commands, want 12 pipelines",
			len(limiters), h.single, h.pipes, h.cmds)
	}
}

// plainScripter is a redis.Scripter and nothing more: it cannot pipeline.
type plainScripter struct{ redis.Scripter }

// Limiters on a client that cannot pipeline are asked one after another,
// each once, with their hooks called once each.
func TestAllowAllWithoutPipeline(t *testing.T) {
	f := newFrozen(t)
	plain := plainScripter{f.rdb}
	var events int
	hook := ratelimit.WithHook(func(context.Context, ratelimit.Event) { events++ })
	a := newLimiter(t, plain, ratelimit.GCRA, ratelimit.WithName("a"), hook)
	b := newLimiter(t, plain, ratelimit.FixedWindow, ratelimit.WithName("b"), hook)
	h := &countingHook{}
	f.rdb.AddHook(h)
	for i := 0; i < 12; i++ {
		ds, err := ratelimit.AllowAll(ctx, "k", a, b)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if ds[0].Allowed != (i < 10) || ds[1].Allowed != (i < 10) {
			t.Fatalf("request %d: %v", i, ds)
		}
	}
	if h.pipes != 0 || h.single < 24 || events != 24 {
		t.Errorf("12 AllowAll of 2 limiters: %d pipelines, %d commands, %d hook events; want none, at least 24, 24",
			h.pipes, h.single, events)
	}
}

// Without the scripts loaded, the batch still works: NOSCRIPT is answered
// by sending the script (bindings.Batch).
func TestAllowAllAfterScriptFlush(t *testing.T) {
	f := newFrozen(t)
	a := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithName("a"))
	b := newLimiter(t, f.rdb, ratelimit.FixedWindow, ratelimit.WithName("b"))
	for i := 0; i < 3; i++ {
		f.rdb.ScriptFlush(ctx)
		ds, err := ratelimit.AllowAll(ctx, "k", a, b)
		if err != nil || !ds[0].Allowed || !ds[1].Allowed || ds[0].Remaining != int64(9-i) {
			t.Fatalf("after SCRIPT FLUSH: %v, %v", ds, err)
		}
	}
}

// The documented non-atomic semantics: a request one limiter denies is
// still counted by the others.
func TestAllowAllCountsWhereAllowed(t *testing.T) {
	f := newFrozen(t)
	wide, _ := ratelimit.New(f.rdb, ratelimit.PerSecond(5), ratelimit.WithName("wide"))
	narrow, _ := ratelimit.New(f.rdb, ratelimit.PerHour(1), ratelimit.WithName("narrow"))
	var got []bool
	for i := 0; i < 3; i++ {
		ds, err := ratelimit.AllowAll(ctx, "k", wide, narrow)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ds[0].Allowed, ds[1].Allowed)
	}
	if want := []bool{true, true, true, false, true, false}; !cmp.Equal(got, want) {
		t.Errorf("(wide, narrow) decisions %v, want %v", got, want)
	}
	if d, _ := wide.Peek(ctx, "k"); d.Remaining != 2 {
		t.Errorf("wide has %d left after 3 requests, want 2", d.Remaining)
	}
}

func TestAllowAllAcrossClients(t *testing.T) {
	f, g := newFrozen(t), newFrozen(t)
	a := newLimiter(t, f.rdb, ratelimit.GCRA)
	b := newLimiter(t, g.rdb, ratelimit.GCRA)
	for i := 0; i < 11; i++ {
		ds, err := ratelimit.AllowAll(ctx, "k", a, b)
		if err != nil || ds[0].Allowed != (i < 10) || ds[1].Allowed != (i < 10) {
			t.Fatalf("request %d: %v, %v", i, ds, err)
		}
	}
	if len(f.Keys()) != 1 || len(g.Keys()) != 1 {
		t.Errorf("keys %v and %v, want one on each server", f.Keys(), g.Keys())
	}
}

func TestAllowAllRefuses(t *testing.T) {
	f := newFrozen(t)
	a := newLimiter(t, f.rdb, ratelimit.GCRA)
	if _, err := ratelimit.AllowAll(ctx, "k"); err == nil {
		t.Error("no limiters: no error")
	} else if !errors.Is(err, ratelimit.ErrInvalidOption) {
		t.Errorf("no limiters: %v, want ErrInvalidOption", err)
	}
	if _, err := ratelimit.AllowAllN(ctx, "k", 0, a, a); err == nil {
		t.Error("n = 0: no error")
	} else if !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Errorf("n = 0: %v, want ErrInvalidCost", err)
	}
	if _, err := ratelimit.AllowAll(ctx, "", a, a); err == nil {
		t.Error("empty key: no error")
	} else if !errors.Is(err, ratelimit.ErrInvalidKey) {
		t.Errorf("empty key: %v, want ErrInvalidKey", err)
	}
	// A nil limiter is refused, not a panic, alone or beside another,
	// and so is one in a Limiters rule.
	for _, ls := range [][]*ratelimit.Limiter{{nil}, {a, nil}, {nil, a}} {
		if _, err := ratelimit.AllowAll(ctx, "k", ls...); !errors.Is(err, ratelimit.ErrInvalidOption) {
			t.Errorf("limiters %v: %v, want ErrInvalidOption", ls, err)
		}
	}
	h := ratelimit.Middleware(ratelimit.Limiters{a, nil}, ratelimit.ByHeader("X-User"))(okHandler)
	if rec := serve(h, get("192.0.2.1:1", "X-User", "u")); rec.Code < 500 {
		t.Errorf("Limiters{a, nil}: %d, want a server error", rec.Code)
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}
}

func TestStrictest(t *testing.T) {
	never := ratelimit.Never
	for _, tt := range []struct {
		ds   []ratelimit.Decision
		want int
	}{
		{nil, -1},
		{[]ratelimit.Decision{{Allowed: true, Remaining: 5}, {Allowed: true, Remaining: 2}, {Allowed: true, Remaining: 3}}, 1},
		{[]ratelimit.Decision{{Allowed: true}, {RetryAfter: time.Second}, {RetryAfter: time.Minute}, {Allowed: true}}, 2},
		{[]ratelimit.Decision{{RetryAfter: time.Hour}, {RetryAfter: never}}, 1},
		{[]ratelimit.Decision{{Allowed: true, Fallback: ratelimit.FailOpen}, {Allowed: true, Remaining: 9}}, 1},
		{[]ratelimit.Decision{{Allowed: true, Remaining: 0}, {Fallback: ratelimit.FailClosed}}, 1},
		{[]ratelimit.Decision{{Fallback: ratelimit.FailClosed}, {RetryAfter: time.Second}}, 1},
	} {
		if got := ratelimit.Strictest(tt.ds); got != tt.want {
			t.Errorf("Strictest(%v) = %d, want %d", tt.ds, got, tt.want)
		}
	}
}
