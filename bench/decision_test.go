package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// benchQuota is the limit every limiter gets in the per-decision
// benchmarks: 100 per second, 100 at once.
var benchQuota = quota{rate: 100, burst: 100}

// manyKeys is how many keys the keys=many variant cycles through.
const manyKeys = 1000

var runID atomic.Int64

// BenchmarkDecision times one decision of cost 1 per op, for redlimit's six
// scripts (server clock), two of them through the Functions library (FCALL
// instead of EVALSHA), and the peers at the same quota:
//
//   - keys=hot: every call on one key, so after the first burst nearly every
//     call is denied (a hot key under load);
//   - keys=many: calls spread over 1000 keys, nearly every call admitted;
//   - mode=serial: one caller; mode=parallel: 64 goroutines (RunParallel).
//
// Besides ns/op it reports the server's µs per decision: srv-cmd-us/op,
// the time inside the commands the limiter sent (INFO commandstats), and
// srv-cpu-us/op, the redis-server process's CPU (INFO cpu), which adds the
// socket reads and writes. errs/op counts failed decisions.
//
// Run it as several processes of -count 1 (see BENCHMARKS.md), not as one
// -count N: -count repeats each sub-benchmark back to back, so a slow spell
// of the machine would land on a few limiters only.
func BenchmarkDecision(b *testing.B) {
	ctx := context.Background()
	c, sent := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	ps, err := peers(c, benchQuota)
	if err != nil {
		b.Fatal(err)
	}
	if err := bindings.LoadFunctions(ctx, c); err != nil {
		b.Fatal(err)
	}
	all := append(append(ours(c, benchQuota, false), viaFunctions(c, benchQuota)...), ps...)
	// Each process starts every group at a random limiter, so a machine
	// that slows down during a pass does not always hurt the same ones;
	// BENCHMARKS.md runs six passes and takes the medians.
	start := rand.IntN(len(all))
	for _, keys := range []string{"hot", "many"} {
		for _, mode := range []string{"serial", "parallel"} {
			for i := range all {
				l := all[(start+i)%len(all)]
				b.Run(fmt.Sprintf("keys=%s/mode=%s/impl=%s", keys, mode, l.name), func(b *testing.B) {
					benchDecisions(b, ctx, c, sent, l, keys == "many", mode == "parallel")
				})
			}
		}
	}
}

func benchDecisions(b *testing.B, ctx context.Context, c *redis.Client, sent *sentCounter, l limiter, many, parallel bool) {
	// Fresh keys for every run, so each run starts from an empty limiter.
	prefix := fmt.Sprintf("bench:%s:%d:", l.name, runID.Add(1))
	keyOf := func(i int64) string {
		if many {
			return fmt.Sprintf("%s%d", prefix, i%manyKeys)
		}
		return prefix + "hot"
	}
	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = keyOf(int64(i))
	}
	// One call first, so the script is cached and the pool has a conn.
	if _, err := l.decide(ctx, prefix+"warmup"); err != nil {
		b.Fatalf("%s: %v", l.name, err)
	}
	before, err := readStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	sent.reset()
	var errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	b.ResetTimer()
	if parallel {
		b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.decide(ctx, keys[next.Add(1)%manyKeys]); err != nil {
					fail(err)
				}
			}
		})
	} else {
		for i := 0; i < b.N; i++ {
			if _, err := l.decide(ctx, keys[i%manyKeys]); err != nil {
				fail(err)
			}
		}
	}
	b.StopTimer()
	counts := sent.snapshot()
	after, err := readStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	cmd, cpu := serverCost(before, after, counts, b.N)
	b.ReportMetric(cmd, "srv-cmd-us/op")
	b.ReportMetric(cpu, "srv-cpu-us/op")
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errs/op")
	if e := errs.Load(); e > 0 {
		b.Logf("%d of %d decisions failed, first: %v", e, b.N, firstErr.Load())
	}
}
