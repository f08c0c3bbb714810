package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// BenchmarkContexts is what a decision's context costs the client: GCRA
// on the distinct scenario's 100 000 keys from 64 goroutines, under
// context.Background (as BenchmarkDecision calls), under a context that
// can end (a request's, as net/http and gRPC give a handler), and with
// WithTimeout too. A context that can end, or a timeout, sends the call
// through ratelimit's path for a caller who leaves before the answer
// (late.go), which costs a goroutine and its bookkeeping a decision.
// make bench does not run it; BENCHMARKS.md ("Measured by hand,
// 2026-12-05") says how it was compared:
//
//	go test -run '^$' -bench BenchmarkContexts -benchmem -benchtime 200000x ./bench/
func BenchmarkContexts(b *testing.B) {
	c, _ := newClient(b)
	for _, mode := range []string{"background", "cancel", "timeout"} {
		b.Run(mode, func(b *testing.B) {
			opts := []ratelimit.Option{ratelimit.WithPrefix("contexts:" + mode)}
			if mode == "timeout" {
				opts = append(opts, ratelimit.WithTimeout(time.Second))
			}
			l, err := ratelimit.New(c, "contexts_"+mode, ratelimit.PerSecond(1_000_000), opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if mode != "background" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			var n atomic.Int64
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := strconv.FormatInt(n.Add(1)%distinctKeys, 10)
					if d, err := l.Allow(ctx, k); err != nil || !d.Allowed {
						b.Errorf("decision %+v, %v: want allowed", d, err)
						return
					}
				}
			})
		})
	}
}
