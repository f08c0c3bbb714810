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
	cmd.(*redis.Cmd).SetVal([]any{int64(1), int64(0), int64(0), int64(0)})
	return nil
}

// BenchmarkLone is what the stage adds to a lone call (one caller, nothing
// in flight): through Wrap against straight to the client.
func BenchmarkLone(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	inner := answering{rdb}
	args := []any{"evalsha", bindings.GCRAScript.Hash(), 1, "rl:x:{user}", int64(10), int64(10), int64(1000), int64(0), "all", int64(1), int64(0)}
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
