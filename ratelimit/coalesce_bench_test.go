package ratelimit_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// BenchmarkDecide measures this layer over miniredis (-benchmem for the
// allocations per decision): a lone caller, 64 goroutines on one hot key,
// and 64 goroutines over 100 000 distinct keys.
func BenchmarkDecide(b *testing.B) {
	m := miniredis.RunT(b)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	l, err := ratelimit.New(rdb, "bench", ratelimit.PerSecond(1e6))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("lone", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := l.Allow(ctx, "lone"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hot-64", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(64 / max(1, testingProcs()))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Allow(ctx, "hot"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("distinct-64", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(64 / max(1, testingProcs()))
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := fmt.Sprint("k", n.Add(1)%100000)
				if _, err := l.Allow(ctx, k); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
