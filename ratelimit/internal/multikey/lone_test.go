package multikey

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// answering is a client that answers every command at once, without a
// server: what is left of a call's time is the stage's own.
type answering struct{ *redis.Client }

func (answering) Process(_ context.Context, cmd redis.Cmder) error {
	cmd.(*redis.Cmd).SetVal(answer)
	return nil
}

// EvalSha answers as Process does: the path of the rueidis and valkey-go
// scripters and of the bindings' larger calls.
func (answering) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetVal(answer)
	return cmd
}

var answer = []any{int64(1), int64(0), int64(0), int64(0)}

// loneCall is the command of a gcra.lua call on one key, as the bindings
// send it.
var loneCall = []any{"evalsha", bindings.GCRAScript.Hash(), 1, "rl:x:{user}", int64(10), int64(10), int64(1000), int64(0), "all", int64(1), int64(0)}

// A lone call (nothing of its script in flight) allocates nothing in the
// stage, through Process and through EvalSha: what it costs wrapped is
// what it costs sent straight to the client.
func TestLoneCallAllocatesNothing(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	inner := answering{rdb}
	m := Wrap(inner, rdb).(*Client)
	ctx := context.Background()
	args := loneCall
	hash, keys := args[1].(string), []string{args[3].(string)}
	process := func(p interface {
		Process(context.Context, redis.Cmder) error
	}) func() {
		return func() { _ = p.Process(ctx, redis.NewCmd(ctx, args...)) }
	}
	evalSha := func(s redis.Scripter) func() {
		return func() { _ = s.EvalSha(ctx, hash, keys, args[4:]...) }
	}
	for _, c := range []struct {
		name            string
		direct, wrapped func()
	}{{"Process", process(inner), process(m)}, {"EvalSha", evalSha(inner), evalSha(m)}} {
		direct, wrapped := testing.AllocsPerRun(100, c.direct), testing.AllocsPerRun(100, c.wrapped)
		if wrapped != direct {
			t.Errorf("%s: a lone call allocates %v times wrapped, %v straight to the client", c.name, wrapped, direct)
		}
	}
}

// BenchmarkLone is what the stage adds to a lone call (one caller, nothing
// in flight): through Wrap against straight to the client.
func BenchmarkLone(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	inner := answering{rdb}
	args := loneCall
	for _, c := range []struct {
		name string
		p    interface {
			Process(context.Context, redis.Cmder) error
		}
	}{{"direct", inner}, {"wrapped", Wrap(inner, rdb).(*Client)}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for range b.N {
				cmd := redis.NewCmd(ctx, args...)
				if err := c.p.Process(ctx, cmd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
