// Package peer holds what the copies of ulule's own tests (in the
// directories below) need to run against this module's store: a store on a
// real Redis in place of memory.NewStore(), and a wait that keeps a
// minute's window from ending mid-test.
package peer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	libredis "github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"

	"github.com/redlimit/redlimit/compat/ulule/redis"
	"github.com/redlimit/redlimit/internal/redisserver"
)

var (
	mu      sync.Mutex
	servers = map[testing.TB]string{}
	stores  atomic.Int64
)

// Store returns a store of this module with a prefix of its own, as
// memory.NewStore() returns an empty store, on a redis-server the test
// starts the first time it asks (a missing redis-server skips the test,
// or fails it under CI). It returns at least 10 s before the end of a
// minute (see MidMinute).
func Store(t testing.TB) limiter.Store {
	t.Helper()
	mu.Lock()
	addr, ok := servers[t]
	mu.Unlock()
	if !ok {
		addr = redisserver.Start(t)
		mu.Lock()
		servers[t] = addr
		mu.Unlock()
		t.Cleanup(func() {
			mu.Lock()
			delete(servers, t)
			mu.Unlock()
		})
	}
	client := libredis.NewClient(&libredis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	store, err := redis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: fmt.Sprintf("limiter:peer:%d", stores.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	MidMinute(t)
	return store
}

// MidMinute returns when at least 10 s are left of the current minute,
// waiting for the next one to start when fewer are. ulule's suites count
// in minute windows and assume no window ends mid-test, which holds for
// ulule's windows (they start at a key's first hit) but not for this
// store's, which are aligned to the epoch: a minute's window ends on the
// minute.
func MidMinute(t testing.TB) { Room(t, time.Minute) }

// Room returns when at least 10 s are left of the current window of length
// w (aligned to the epoch), waiting for the next one to start when fewer
// are. The test's redis-server shares this machine's clock.
func Room(t testing.TB, w time.Duration) {
	t.Helper()
	for {
		left := w - time.Duration(time.Now().UnixNano())%w
		if left >= 10*time.Second {
			return
		}
		t.Logf("waiting %v for the next %v window", left.Round(time.Millisecond), w)
		time.Sleep(left)
	}
}
