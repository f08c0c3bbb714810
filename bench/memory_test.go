package bench

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

	"github.com/redlimit/redlimit/bindings"
)

// memoryQuota keeps every key alive through the measurement: after one
// admitted call of 100 per hour, every limiter's key lives for 36 s or
// more (the docs' bucket sets no TTL at all).
var memoryQuota = newQuota(100, 100, time.Hour)

// memorySample is how many keys MEMORY USAGE is asked about (every
// distinctKeys/memorySample-th key).
const memorySample = 1000

// BenchmarkMemory measures what each limiter's state costs Redis per key:
// one admitted call on each of 100 000 fresh keys with the same names for
// every limiter (and Redis keys of the same length; see oursPrefix), from
// an empty server. It reports the INFO memory delta per key (used_memory
// after minus before, divided by the keys: what a user's server pays,
// with the key's name, its TTL and the main dictionary's share) as
// info-B/key, and the mean MEMORY USAGE of a sample of 1000 keys as
// usage-B/key. b.N is ignored: run it with -benchtime 1x.
func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	c, _ := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	warmPool(b, c)
	ps, err := peers(c, memoryQuota)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range append(ours(c, memoryQuota, false, plain), ps...) {
		expect("memory", "impl", l.name)
		b.Run("impl="+l.name, func(b *testing.B) {
			info, usage := memoryPerKey(b, ctx, c, l)
			b.ReportMetric(info, "info-B/key")
			b.ReportMetric(usage, "usage-B/key")
		})
	}
}

func memoryPerKey(b *testing.B, ctx context.Context, c *redis.Client, l limiter) (info, usage float64) {
	if err := c.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	// The limiter's own setup (a script it loads, a first call) before the
	// first reading, on a key that is then deleted.
	if _, _, err := l.decide(ctx, "warmup"); err != nil {
		b.Fatal(err)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	before := usedMemory(b, ctx, c)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= distinctKeys {
					return
				}
				if ok, _, err := l.decide(ctx, keyNames[i]); err != nil || !ok {
					failed.CompareAndSwap(nil, fmt.Sprintf("%s: %v, %v", keyNames[i], ok, err))
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		b.Fatalf("%s: a first call was not admitted: %v", l.name, f)
	}
	if n := c.DBSize(ctx).Val(); n != distinctKeys {
		b.Fatalf("%s: %d keys, want %d", l.name, n, distinctKeys)
	}
	after := usedMemory(b, ctx, c)

	var sum, n int64
	var cursor uint64
	for n < memorySample {
		keys, next, err := c.Scan(ctx, cursor, "*", 100).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if n < memorySample {
				sum += c.MemoryUsage(ctx, k, 0).Val()
				n++
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	return float64(after-before) / distinctKeys, float64(sum) / float64(n)
}

// usedMemory reads used_memory. Redis frees memory lazily in a background
// thread after some commands, so it is read until it holds still.
func usedMemory(b *testing.B, ctx context.Context, c *redis.Client) int64 {
	read := func() int64 {
		s, err := c.Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
		}
		b.Fatal("INFO memory has no used_memory")
		return 0
	}
	last := read()
	for i := 0; i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		now := read()
		if now == last {
			return now
		}
		last = now
	}
	return last
}
