package ratelimit_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// Many callers on many keys, every algorithm and Atomic, on a real Redis:
// the calls go in batches across keys (fewer commands than decisions), and
// every key admits exactly its limit, never more, as calls of their own
// would. (Nothing refills: the period is a day.)
func TestAcrossKeysEveryAlgorithmAdmitsItsLimit(t *testing.T) {
	addr := redisserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	const limit, tries, keys, callers = 5, 9, 300, 64
	day := ratelimit.Limit{Rate: limit, Burst: limit, Period: 24 * time.Hour}
	rules := map[string]ratelimit.Rule{}
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval,
		ratelimit.LeakyBucket, ratelimit.FixedWindow, ratelimit.SlidingWindowLog, ratelimit.SlidingWindowCounter} {
		l, err := ratelimit.New(rdb, "k"+strings.ToLower(strings.ReplaceAll(alg.String(), "_", "")), day, ratelimit.WithAlgorithm(alg))
		if err != nil {
			t.Fatal(err)
		}
		rules[alg.String()] = l
	}
	a1, err := ratelimit.New(rdb, "atomica", day)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := ratelimit.New(rdb, "atomicb", ratelimit.Limit{Rate: 1000, Burst: 1000, Period: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rules["atomic"], err = ratelimit.Atomic(a1, a2); err != nil {
		t.Fatal(err)
	}
	for name, r := range rules {
		t.Run(name, func(t *testing.T) {
			before := evalshaCalls(t, rdb)
			admitted := make([]atomic.Int64, keys)
			var next atomic.Int64
			var wg sync.WaitGroup
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= keys*tries {
							return
						}
						k := i % keys
						d, err := r.AllowN(ctx, fmt.Sprint("user", k), 1)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							admitted[k].Add(1)
						}
					}
				}()
			}
			wg.Wait()
			for k := range admitted {
				if n := admitted[k].Load(); n != limit {
					t.Fatalf("key user%d: %d of %d admitted, want %d", k, n, tries, limit)
				}
			}
			calls := evalshaCalls(t, rdb) - before
			t.Logf("%d decisions in %d EVALSHA", keys*tries, calls)
			if calls >= keys*tries/2 {
				t.Errorf("%d decisions in %d EVALSHA: the calls did not go in batches", keys*tries, calls)
			}
		})
	}
}

// evalshaCalls is the server's count of EVALSHA commands so far.
func evalshaCalls(t *testing.T, rdb *redis.Client) int {
	info := rdb.Info(context.Background(), "commandstats").Val()
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}
