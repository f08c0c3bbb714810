package bindings

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// smoke calls one bundled script through its typed API with room for
// exactly one unit of cost, and reports whether the call was allowed.
type smoke func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error)

// smokes has one entry per script in ../lua; TestSmokeCoversEveryScript
// fails when a script has none, so a new script cannot skip this.
var smokes = map[string]smoke{
	"token_bucket.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := TokenBucket(ctx, c, []string{key}, TokenBucketParams{Capacity: 1, Rate: 1, Period: time.Second, Now: now, Refill: "interval", Requests: []TokenBucketRequest{{Cost: 1}}})
		return err == nil && r.Decisions[0].Allowed == 1, err
	},
	"fixed_window.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := FixedWindow(ctx, c, key, FixedWindowParams{Limit: 1, Window: time.Second, Cost: 1, Now: now})
		return r.Allowed, err
	},
	"leaky_bucket.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := LeakyBucket(ctx, c, key, LeakyBucketParams{Capacity: 1, Rate: 1, Period: time.Second, Cost: 1, Now: now})
		return r.Allowed, err
	},
	"sliding_window_counter.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := SlidingWindowCounter(ctx, c, key, SlidingWindowCounterParams{Limit: 1, Window: time.Second, Cost: 1, Now: now})
		return r.Allowed, err
	},
	"sliding_window_log.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := SlidingWindowLog(ctx, c, key, SlidingWindowLogParams{Limit: 1, Window: time.Second, Cost: 1, Now: now})
		return r.Allowed, err
	},
	"gcra.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := GCRA(ctx, c, []string{key}, GCRAParams{Burst: 1, Rate: 1, Period: time.Second, Now: now, Take: GCRATakeAll, Requests: []GCRARequest{{Cost: 1}}})
		return err == nil && r.Decisions[0].Allowed == 1, err
	},
	"multi.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		r, err := Multi(ctx, c, []string{key, key + ":day"}, MultiParams{Cost: 1, Now: now, Limits: []MultiLimit{{Burst: 1, Rate: 1, Period: time.Second}, {Burst: 10, Rate: 10, Period: 24 * time.Hour}}})
		return r.Allowed, err
	},
	"concurrency.lua": func(ctx context.Context, c redis.Scripter, key string, now time.Time) (bool, error) {
		// Each call takes a lease of its own: the same id again would be
		// the same lease.
		r, err := Concurrency(ctx, c, key, ConcurrencyParams{Op: ConcurrencyOpAcquire, Lease: fmt.Sprint(leases.Add(1)), Limit: 1, TTL: time.Second, Now: now})
		return r.Allowed, err
	},
}

var leases atomic.Int64

func TestSmokeCoversEveryScript(t *testing.T) {
	for _, s := range allScripts {
		if smokes[s.file] == nil {
			t.Errorf("%s has no entry in smokes", s.file)
		}
	}
}

// Each limiter admits the first unit and denies the second at the same
// instant, both through the typed API.
func TestSmoke(t *testing.T) {
	_, c := newServer(t)
	ctx := context.Background()
	now := time.UnixMicro(1_700_000_000_500_000)
	for file, call := range smokes {
		t.Run(file, func(t *testing.T) {
			var got []bool
			for i := 0; i < 2; i++ {
				ok, err := call(ctx, c, "smoke:"+file, now)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				got = append(got, ok)
			}
			if diff := cmp.Diff([]bool{true, false}, got); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
}
