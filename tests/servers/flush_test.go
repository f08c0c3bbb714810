package servers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// TestScriptFlushUnderLoad empties the script cache every few ms while
// goroutines decide through the single-call path and the Batch path. No
// call may fail, and nothing may be admitted beyond the bucket's bound.
func TestScriptFlushUnderLoad(t *testing.T) {
	for _, target := range []struct {
		name string
		open func(t *testing.T) interface {
			redis.Cmdable
			redis.Scripter
		}
	}{
		{"redis", func(t *testing.T) interface {
			redis.Cmdable
			redis.Scripter
		} {
			return standalone(t, 3)
		}},
		{"cluster", func(t *testing.T) interface {
			redis.Cmdable
			redis.Scripter
		} {
			return cluster(t)
		}},
	} {
		t.Run(target.name, func(t *testing.T) {
			c := target.open(t)
			ctx := context.Background()
			key := fmt.Sprintf("flush:{tb}:%d", time.Now().UnixNano())
			p := bindings.TokenBucketParams{Capacity: 20, Rate: 200, Period: time.Second, Refill: "smooth", Requests: []bindings.TokenBucketRequest{{Cost: 1}}}
			var (
				admitted, calls, flushes atomic.Int64
				failed                   atomic.Value
				wg                       sync.WaitGroup
			)
			fail := func(err error) { failed.CompareAndSwap(nil, err) }
			// Run for at least a second and until enough has happened to
			// prove something (at most 30 s): on a loaded machine the
			// flusher may get fewer turns, so a fixed second is not enough.
			var stop atomic.Bool
			start := time.Now()
			go func() {
				for time.Since(start) < 30*time.Second &&
					(time.Since(start) < time.Second || flushes.Load() < 50 || calls.Load() < 500) {
					time.Sleep(10 * time.Millisecond)
				}
				stop.Store(true)
			}()
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						res, err := bindings.TokenBucket(ctx, c, []string{key}, p)
						if err != nil {
							fail(err)
							return
						}
						calls.Add(1)
						if res.Decisions[0].Allowed == 1 {
							admitted.Add(1)
						}
					}
				}()
			}
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						b := bindings.NewBatch()
						var pending []*bindings.Pending[bindings.TokenBucketResult]
						for i := 0; i < 8; i++ {
							pending = append(pending, b.TokenBucket([]string{key}, p))
						}
						if err := b.Exec(ctx, c); err != nil {
							fail(err)
							return
						}
						for _, pd := range pending {
							res, err := pd.Result()
							if err != nil {
								fail(err)
								return
							}
							calls.Add(1)
							if res.Decisions[0].Allowed == 1 {
								admitted.Add(1)
							}
						}
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if err := c.ScriptFlush(ctx).Err(); err != nil {
						fail(err)
						return
					}
					flushes.Add(1)
					time.Sleep(2 * time.Millisecond)
				}
			}()
			wg.Wait()
			elapsed := time.Since(start)
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("a call failed during SCRIPT FLUSH: %v", err)
			}
			most := 20 + 200*elapsed.Seconds()
			t.Logf("%d calls, %d admitted (bound %.0f), %d flushes", calls.Load(), admitted.Load(), most, flushes.Load())
			if flushes.Load() < 50 || calls.Load() < 500 {
				t.Fatalf("too little happened to prove anything: %d flushes, %d calls", flushes.Load(), calls.Load())
			}
			if float64(admitted.Load()) > most {
				t.Errorf("over-admitted: %d > %.1f", admitted.Load(), most)
			}
		})
	}
}
