package ratelimit_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// cannedScripter answers every script call at once with one reply, so a
// test sees this layer's own work and nothing of the network's.
type cannedScripter struct{}

var cannedReply = []any{int64(1), int64(9), int64(0), int64(100)}

func (cannedScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return redis.NewCmdResult(cannedReply, nil)
}
func (cannedScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return redis.NewCmdResult(cannedReply, nil)
}
func (cannedScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return redis.NewCmdResult(cannedReply, nil)
}
func (cannedScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return redis.NewCmdResult(cannedReply, nil)
}
func (cannedScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(nil, nil)
}
func (cannedScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}
func (cannedScripter) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return redis.NewIntResult(int64(len(keys)), nil)
}

// A hook costs nothing when unused, and passing it an Event allocates
// nothing either: a decision with a hook, or two, allocates exactly what
// one without a hook does.
func TestHookAllocatesNothing(t *testing.T) {
	var c cannedScripter
	plain, _ := ratelimit.New(c, "test", ratelimit.PerSecond(10))
	var seen int
	hooked, _ := ratelimit.New(c, "test", ratelimit.PerSecond(10), ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
		if e.Decision.Allowed {
			seen++
		}
	}))
	allow := func(l *ratelimit.Limiter) func() {
		return func() {
			if d, err := l.Allow(ctx, "user:42"); err != nil || !d.Allowed {
				t.Fatal(d, err)
			}
		}
	}
	var second int
	twice, _ := ratelimit.New(c, "test", ratelimit.PerSecond(10), ratelimit.WithHook(func(context.Context, ratelimit.Event) { seen++ }),
		ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
			if e.Decision.Source == "redis" {
				second++
			}
		}))
	without := testing.AllocsPerRun(1000, allow(plain))
	with := testing.AllocsPerRun(1000, allow(hooked))
	with2 := testing.AllocsPerRun(1000, allow(twice))
	if with != without || with2 != without || seen == 0 || second == 0 {
		t.Errorf("a decision allocates %v times without a hook, %v with one and %v with two (seen %d, %d)", without, with, with2, seen, second)
	}
	t.Logf("%v allocations per decision (the key, the bindings' arguments, go-redis's command)", without)
}

func BenchmarkAllow(b *testing.B) {
	var c cannedScripter
	for _, bc := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"hook=none", nil},
		{"hook=noop", []ratelimit.Option{ratelimit.WithHook(func(context.Context, ratelimit.Event) {})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, _ := ratelimit.New(c, "test", ratelimit.PerSecond(10), bc.opts...)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l.Allow(ctx, "user:42")
			}
		})
	}
}
