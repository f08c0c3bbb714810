// Package autopipeline runs the ratelimit package over go-redis's
// AutoPipeliner, which coalesces concurrent commands into pipelines. It is
// a module of its own because the AutoPipeliner needs go-redis v9.22 or
// later, which needs a newer Go than the main module's go line.
package autopipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// The AutoPipeliner is a ratelimit.Client: the compiler holds it.
var _ ratelimit.Client = (*redis.AutoPipeliner)(nil)

func TestAutoPipeliner(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) // frozen: nothing refills
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	blocking, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer blocking.Close()
	async, err := rdb.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer async.Close()

	for name, ap := range map[string]*redis.AutoPipeliner{"blocking": blocking, "async": async} {
		for alg := ratelimit.GCRA; alg <= ratelimit.SlidingWindowCounter; alg++ {
			l, err := ratelimit.New(ap, name+"-"+alg.String(), ratelimit.PerMinute(100), ratelimit.WithAlgorithm(alg))
			if err != nil {
				t.Fatal(err)
			}
			// 64 goroutines at once, coalesced into pipelines: exactly the
			// burst passes.
			var allowed, failed atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						d, err := l.Allow(context.Background(), "hot")
						if err != nil {
							failed.Add(1)
						} else if d.Allowed {
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if allowed.Load() != 100 || failed.Load() != 0 {
				t.Errorf("%s %v: %d of 256 allowed, %d failed; want 100, 0", name, alg, allowed.Load(), failed.Load())
			}
			// Several limits in one round trip over the AutoPipeliner's
			// own Pipeline.
			other, _ := ratelimit.New(ap, name+"-other-"+alg.String(), ratelimit.Per(1, time.Hour), ratelimit.WithAlgorithm(alg))
			both, err := ratelimit.All(l, other)
			if err != nil {
				t.Fatal(err)
			}
			d, err := both.AllowN(context.Background(), "cold", 1)
			if err != nil || !d.Allowed || len(d.Parts) != 2 || d.Parts[0].Remaining != 99 {
				t.Errorf("%s %v: All %v, %v", name, alg, d, err)
			}
			if err := l.Reset(context.Background(), "hot"); err != nil {
				t.Errorf("%s %v: Reset: %v", name, alg, err)
			}
			if d, _ := l.Peek(context.Background(), "hot"); d.Remaining != 100 {
				t.Errorf("%s %v: after Reset %v", name, alg, d)
			}
		}
	}
}
