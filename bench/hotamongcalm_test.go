package bench

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// BenchmarkHotAmongCalm is a hot key among calm ones: 64 goroutines, every
// other decision on one key and the rest on the distinct scenario's keys,
// for the fixed window and the leaky bucket, whose scripts read and write
// a key once for its calls in a row of a batch. It measures the send
// stage's grouping of a key's calls (ratelimit/internal/multikey/runs.go)
// as decisions/s and Redis CPU per decision; make bench does not run it
// (BENCHMARKS.md, "Measured by hand, 2026-12-04, 23:30", says how it was
// compared):
//
//	go test -run '^$' -bench BenchmarkHotAmongCalm -benchtime 60000x ./bench/
func BenchmarkHotAmongCalm(b *testing.B) {
	ctx := context.Background()
	c, _ := newClient(b)
	warmPool(b, c)
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.LeakyBucket} {
		b.Run(alg.String(), func(b *testing.B) {
			c.FlushAll(ctx)
			// Far from its limit: every decision writes.
			l, err := ratelimit.New(c, "mixed", ratelimit.Per(1_000_000_000, time.Hour), ratelimit.WithAlgorithm(alg))
			if err != nil {
				b.Fatal(err)
			}
			var n, errs atomic.Int64
			before, err := readStats(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					key := "hot"
					if i%2 == 0 {
						key = keyNames[int(i/2)%len(keyNames)]
					}
					if d, err := l.Allow(ctx, key); err != nil || !d.Allowed {
						errs.Add(1)
					}
				}
			})
			b.StopTimer()
			after, err := readStats(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			if errs.Load() > 0 {
				b.Fatalf("%d decisions failed or were denied", errs.Load())
			}
			b.ReportMetric((after.cpu-before.cpu)*1e6/float64(b.N), "srv-cpu-us/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
