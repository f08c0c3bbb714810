package ratelimit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	keys "github.com/redlimit/redlimit/ratelimit/internal/key"
)

// testLimit is the limit the cache tests deny under.
var testLimit = PerSecond(10)

func denial(retry time.Duration) Decision {
	return Decision{Name: "t", Limit: testLimit, RetryAfter: retry, ResetAfter: 2 * retry}
}

// The cache holds at most its size, sharded or not, however many keys are
// denied, and keeps the entries that live longest when it must choose.
func TestDenyCacheMemoryBound(t *testing.T) {
	for _, size := range []int{1, 7, 1000, minShardedSize, 5000} {
		c := newDenyCache(size)
		total := 0
		for i := range c.shards {
			total += c.shards[i].max
		}
		if total != size {
			t.Errorf("size %d: the shards hold %d", size, total)
		}
		for i := 0; i < 3*size+100; i++ {
			c.note(fmt.Sprintf("key%d", i), 1, 0, 0, 0, denial(time.Duration(1+i%50)*time.Second))
			if n := c.len(); n > size {
				t.Fatalf("size %d: %d entries after %d denials", size, n, i+1)
			}
		}
		if n := c.len(); n < size*9/10 {
			t.Errorf("size %d: only %d entries kept", size, n)
		}
	}
}

// A full shard drops expired entries first, then the soonest to expire.
func TestDenyCacheEvicts(t *testing.T) {
	c := newDenyCache(2)
	c.note("short", 1, 0, 0, 0, denial(10*time.Millisecond))
	c.note("long", 1, 0, 0, 0, denial(time.Second))
	c.note("new", 1, 0, 0, 0, denial(time.Second))
	if _, ok := c.lookup("short", 1, 1, "t", testLimit); ok {
		t.Error("the soonest to expire was kept")
	}
	for _, k := range []string{"long", "new"} {
		if _, ok := c.lookup(k, 1, 1, "t", testLimit); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	// At 2 s both have expired: a new entry drops them and fits.
	now := int64(2 * time.Second)
	c.note("later", 1, now, 0, 0, denial(time.Second))
	if c.len() != 1 {
		t.Errorf("%d entries, want the new one alone", c.len())
	}
}

func TestDenyCacheKeys(t *testing.T) {
	c := newDenyCache(10)
	long := strings.Repeat("x", keys.MaxTagLen+1)
	c.note(long, 1, 0, 0, 0, denial(time.Second))
	if c.len() != 0 {
		t.Error("a key longer than a hash tag was cached")
	}
	// The entry keeps a copy of the key, not the caller's buffer.
	buf := []byte("user:42 and a large request around it")
	key := string(buf[:7])
	c.note(key, 1, 0, 0, 0, denial(time.Second))
	for k := range c.shards[0].entries {
		if k != "user:42" || &[]byte(k)[0] == &buf[0] {
			t.Errorf("entry key %q", k)
		}
	}
	// Nothing shorter than 1 ms, no Never, no fallback.
	for _, d := range []Decision{denial(time.Millisecond), denial(Never), {Fallback: FailClosed, Cause: ErrUnavailable}, {Allowed: true}} {
		c.note("k", 1, 0, 0, 0, d)
		if _, ok := c.lookup("k", 1, 0, "t", testLimit); ok {
			t.Errorf("%+v was cached", d)
		}
	}
}

// A denial that was on its way while Reset ran is not stored after it.
func TestDenyCacheEpoch(t *testing.T) {
	c := newDenyCache(10)
	epoch := c.epoch.Load()
	c.forget("k")
	c.note("k", 1, 0, epoch, 0, denial(time.Second))
	if c.len() != 0 {
		t.Error("a denial read before a Reset was stored after it")
	}
	c.note("k", 1, 0, c.epoch.Load(), 0, denial(time.Second))
	if c.len() != 1 {
		t.Error("a denial after the Reset was not stored")
	}
}

// BenchmarkDenyCache measures a cached denial's lookup on one hot key and
// over many keys, with the cache in one shard or in denyShards, at 64
// goroutines: the numbers behind minShardedSize (see BENCHMARKS.md).
func BenchmarkDenyCache(b *testing.B) {
	for _, keys := range []int{1, 10000} {
		for _, shards := range []int{1, denyShards} {
			b.Run(fmt.Sprintf("keys=%d/shards=%d", keys, shards), func(b *testing.B) {
				size := 2 * keys
				if shards > 1 {
					size = max(size, minShardedSize)
				}
				c := newDenyCache(size)
				if len(c.shards) != shards {
					c.shards = make([]denyShard, shards)
					for i := range c.shards {
						c.shards[i] = denyShard{max: size, entries: map[string]denyEntry{}}
					}
				}
				names := make([]string, keys)
				for i := range names {
					names[i] = fmt.Sprintf("user:%d", i)
					c.note(names[i], 1, 0, 0, 0, denial(time.Hour))
				}
				b.SetParallelism(32)
				var mu sync.Mutex
				i := 0
				b.RunParallel(func(pb *testing.PB) {
					mu.Lock()
					j := i
					i += 7919
					mu.Unlock()
					for pb.Next() {
						j++
						if _, ok := c.lookup(names[j%keys], 1, 1, "t", testLimit); !ok {
							b.Error("not cached")
							return
						}
					}
				})
			})
		}
	}
}

// The answers of one batch are noted in whatever order their callers
// wake: by their tickets, an admission Redis ran before a denial does not
// drop it, and an older denial does not replace a newer one.
func TestDenyCacheTicketOrder(t *testing.T) {
	c := newDenyCache(10)
	c.note("k", 1, 0, 0, 3, denial(time.Second))
	c.note("k", 1, 0, 0, 2, Decision{Allowed: true, Limit: testLimit})
	c.note("k", 1, 0, 0, 1, denial(time.Hour))
	d, ok := c.lookup("k", 1, 0, "t", testLimit)
	if !ok || d.RetryAfter != time.Second {
		t.Fatalf("after older answers noted late: %v, %v; want ticket 3's denial", d, ok)
	}
	c.note("k", 1, 0, 0, 4, Decision{Allowed: true, Limit: testLimit})
	if _, ok := c.lookup("k", 1, 0, "t", testLimit); ok {
		t.Error("a newer admission did not drop the denial")
	}
	// Answers without tickets (All, WithoutCoalescing) are taken as noted.
	c.note("k", 1, 0, 0, 5, denial(time.Second))
	c.note("k", 1, 0, 0, 0, Decision{Allowed: true, Limit: testLimit})
	if _, ok := c.lookup("k", 1, 0, "t", testLimit); ok {
		t.Error("an answer without a ticket was not taken")
	}
}
