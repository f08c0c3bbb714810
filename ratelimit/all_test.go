package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
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

// mustAll is All that fails the test on an error.
func mustAll(t testing.TB, rules ...ratelimit.Rule) ratelimit.Rule {
	t.Helper()
	r, err := ratelimit.All(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// parts are a Decision's limits, each part or the decision itself.
func parts(d ratelimit.Decision) []ratelimit.Decision {
	if len(d.Parts) > 0 {
		return d.Parts
	}
	return []ratelimit.Decision{d}
}

func TestAllIsOneRoundTrip(t *testing.T) {
	f := newFrozen(t)
	var rules []ratelimit.Rule
	for _, alg := range ratelimit.Algorithms() {
		rules = append(rules, newNamed(t, f.rdb, alg.String(), alg))
	}
	all := mustAll(t, rules...)
	if err := bindings.LoadAll(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	f.rdb.AddHook(h)
	for i := 0; i < 12; i++ {
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Parts) != len(rules) || d.Allowed != (i < 10) {
			t.Fatalf("request %d: %v with %d parts", i, d, len(d.Parts))
		}
		for j, p := range d.Parts {
			if p.Allowed != (i < 10) || p.Name != ratelimit.Algorithms()[j].String() {
				t.Fatalf("request %d, part %d: %v", i, j, p)
			}
		}
	}
	if h.single != 0 || h.pipes != 12 || h.cmds != 12*len(rules) {
		t.Errorf("12 decisions of %d limiters sent %d commands and %d pipelines of %d commands, want 12 pipelines",
			len(rules), h.single, h.pipes, h.cmds)
	}
}

// plainScripter is a ratelimit.Client and nothing more: it cannot pipeline.
type plainScripter struct{ ratelimit.Client }

// Limiters on a client that cannot pipeline are asked one after another,
// each once, with their hooks called once each.
func TestAllWithoutPipeline(t *testing.T) {
	f := newFrozen(t)
	plain := plainScripter{f.rdb}
	var events int
	hook := ratelimit.WithHook(func(context.Context, ratelimit.Event) { events++ })
	a := newNamed(t, plain, "a", ratelimit.GCRA, hook)
	b := newNamed(t, plain, "b", ratelimit.FixedWindow, hook)
	all := mustAll(t, a, b)
	h := &countingHook{}
	f.rdb.AddHook(h)
	for i := 0; i < 12; i++ {
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if d.Parts[0].Allowed != (i < 10) || d.Parts[1].Allowed != (i < 10) {
			t.Fatalf("request %d: %v", i, d.Parts)
		}
	}
	if h.pipes != 0 || h.single < 24 || events != 24 {
		t.Errorf("12 decisions of 2 limiters: %d pipelines, %d commands, %d hook events; want none, at least 24, 24",
			h.pipes, h.single, events)
	}
}

// Without the scripts loaded, the batch still works: NOSCRIPT is answered
// by sending the script (bindings.Batch).
func TestAllAfterScriptFlush(t *testing.T) {
	f := newFrozen(t)
	all := mustAll(t, newNamed(t, f.rdb, "a", ratelimit.GCRA), newNamed(t, f.rdb, "b", ratelimit.FixedWindow))
	for i := 0; i < 3; i++ {
		f.rdb.ScriptFlush(ctx)
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil || !d.Allowed || d.Parts[0].Remaining != int64(9-i) {
			t.Fatalf("after SCRIPT FLUSH: %v, %v", d, err)
		}
	}
}

// The documented non-atomic semantics: a request one limiter denies is
// still counted by the others. (TestAtomicAllOrNothing is the contrast.)
func TestAllCountsWhereAllowed(t *testing.T) {
	f := newFrozen(t)
	wide, _ := ratelimit.New(f.rdb, "wide", ratelimit.PerSecond(5))
	narrow, _ := ratelimit.New(f.rdb, "narrow", ratelimit.Per(1, time.Hour))
	all := mustAll(t, wide, narrow)
	var got []bool
	for i := 0; i < 3; i++ {
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Parts[0].Allowed, d.Parts[1].Allowed)
		if d.Allowed != (i == 0) || i > 0 && d.Name != "narrow" {
			t.Errorf("request %d: %v, want narrow to bind", i, d)
		}
	}
	if want := []bool{true, true, true, false, true, false}; !cmp.Equal(got, want) {
		t.Errorf("(wide, narrow) decisions %v, want %v", got, want)
	}
	if d, _ := wide.Peek(ctx, "k"); d.Remaining != 2 {
		t.Errorf("wide has %d left after 3 requests, want 2", d.Remaining)
	}
}

func TestAllAcrossClients(t *testing.T) {
	f, g := newFrozen(t), newFrozen(t)
	all := mustAll(t, newLimiter(t, f.rdb, ratelimit.GCRA), newLimiter(t, g.rdb, ratelimit.GCRA))
	for i := 0; i < 11; i++ {
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil || d.Parts[0].Allowed != (i < 10) || d.Parts[1].Allowed != (i < 10) {
			t.Fatalf("request %d: %v, %v", i, d, err)
		}
	}
	if len(f.Keys()) != 1 || len(g.Keys()) != 1 {
		t.Errorf("keys %v and %v, want one on each server", f.Keys(), g.Keys())
	}
}

// All of rules of every kind: an Atomic rule inside stays atomic, Select and
// Unlimited are asked on their own, and parts are flattened.
func TestAllOfRules(t *testing.T) {
	f := newFrozen(t)
	sec, _ := ratelimit.New(f.rdb, "sec", ratelimit.PerSecond(2))
	hour, _ := ratelimit.New(f.rdb, "hour", ratelimit.Per(100, time.Hour))
	day, _ := ratelimit.New(f.rdb, "day", ratelimit.Per(3, 24*time.Hour), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	m, err := ratelimit.Atomic(sec, hour)
	if err != nil {
		t.Fatal(err)
	}
	all := mustAll(t, m, ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return day, nil }), ratelimit.Unlimited)
	var names []string
	for i := 0; i < 4; i++ {
		d, err := all.AllowN(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Parts) != 3 {
			t.Fatalf("request %d: %d parts, want sec, hour, day", i, len(d.Parts))
		}
		names = append(names, d.Name)
	}
	// sec denies the third: the Atomic rule counts it in neither, day does.
	if d, _ := hour.Peek(ctx, "k"); d.Remaining != 98 {
		t.Errorf("hour has %d left, want 98 (atomic with sec)", d.Remaining)
	}
	if d, _ := day.Peek(ctx, "k"); d.Allowed || d.Remaining != 0 {
		t.Errorf("day %v, want the 3 it allowed counted", d)
	}
	if want := []string{"sec", "sec", "sec", "day"}; !cmp.Equal(names, want) {
		t.Errorf("binding limits %v, want %v", names, want)
	}
}

func TestAllRefuses(t *testing.T) {
	f := newFrozen(t)
	a := newLimiter(t, f.rdb, ratelimit.GCRA)
	var nilLimiter *ratelimit.Limiter
	for name, rules := range map[string][]ratelimit.Rule{
		"none":              nil,
		"nil":               {nil},
		"nil after":         {a, nil},
		"a nil *Limiter":    {nilLimiter, a},
		"one prefix, twice": {a, newLimiter(t, f.rdb, ratelimit.GCRA)},
	} {
		if _, err := ratelimit.All(rules...); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	all := mustAll(t, a, newNamed(t, f.rdb, "b", ratelimit.GCRA))
	if _, err := all.AllowN(ctx, "k", 0); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("n = 0: %v, want ErrInvalid", err)
	}
	if _, err := all.AllowN(ctx, "", 1); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("empty key: %v, want ErrInvalid", err)
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}
}
