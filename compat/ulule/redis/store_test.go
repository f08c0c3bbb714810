package redis_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	libredis "github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/compat/ulule/internal/peer"
	"github.com/redlimit/redlimit/compat/ulule/redis"
	"github.com/redlimit/redlimit/internal/peercopy"
	"github.com/redlimit/redlimit/internal/redisserver"
)

// TestPeerCopies holds the copies of ulule's tests to ulule's own files,
// and their deliberate differences to the list in doc.go.
func TestPeerCopies(t *testing.T) {
	want := map[string][]string{
		"drivers/store/tests/tests.go":                   {"D1"},
		"drivers/store/redis/store_test.go":              nil,
		"drivers/middleware/stdlib/middleware_test.go":   nil,
		"drivers/middleware/gin/middleware_test.go":      nil,
		"drivers/middleware/fasthttp/middleware_test.go": nil,
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for file, wantIDs := range want {
		// drivers/store/tests/tests.go is at ../internal/peer/tests/tests.go.
		dir := strings.TrimPrefix(file, "drivers/")
		dir = strings.TrimPrefix(dir, "store/")
		dir = strings.TrimPrefix(dir, "middleware/")
		copyPath := "../internal/peer/" + dir
		ids := peercopy.Check(t, copyPath, "github.com/ulule/limiter/v3", file)
		if diff := cmp.Diff(wantIDs, ids); diff != "" {
			t.Errorf("deliberate differences in %s (-want +got):\n%s", copyPath, diff)
		}
		for _, id := range ids {
			if !strings.Contains(string(doc), "//   - "+id+": ") {
				t.Errorf("doc.go does not list deliberate difference %s", id)
			}
		}
	}
}

func newClient(t *testing.T) *libredis.Client {
	t.Helper()
	rdb := libredis.NewClient(&libredis.Options{Addr: redisserver.Start(t)})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newStore(t *testing.T, rdb *libredis.Client) limiter.Store {
	t.Helper()
	store, err := redis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "limiter"})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// A counter ulule's store wrote is refused with BADSTATE and left as it
// was, never read as a count.
func TestUluleStateRefused(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t)
	theirs, err := ululeredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "limiter"})
	if err != nil {
		t.Fatal(err)
	}
	ours := newStore(t, rdb)
	rate := limiter.Rate{Limit: 10, Period: time.Minute}
	if _, err := theirs.Increment(ctx, "old", 3, rate); err != nil {
		t.Fatal(err)
	}
	before := rdb.Get(ctx, "limiter:old").Val()
	ttlBefore := rdb.PTTL(ctx, "limiter:old").Val()
	for name, call := range map[string]func() (limiter.Context, error){
		"Get":       func() (limiter.Context, error) { return ours.Get(ctx, "old", rate) },
		"Peek":      func() (limiter.Context, error) { return ours.Peek(ctx, "old", rate) },
		"Increment": func() (limiter.Context, error) { return ours.Increment(ctx, "old", 2, rate) },
	} {
		if got, err := call(); !errors.Is(err, bindings.ErrBadState) || got != (limiter.Context{}) {
			t.Errorf("%s on ulule's counter %q = %+v, %v; want ErrBadState", name, before, got, err)
		}
	}
	after := rdb.Get(ctx, "limiter:old").Val()
	if ttl := rdb.PTTL(ctx, "limiter:old").Val(); after != before || ttl <= 0 || ttl > ttlBefore {
		t.Errorf("ulule's counter went from %q (PTTL %v) to %q (PTTL %v); want it untouched", before, ttlBefore, after, ttl)
	}
	// Reset starts the key fresh.
	if _, err := ours.Reset(ctx, "old", rate); err != nil {
		t.Fatal(err)
	}
	if got, err := ours.Get(ctx, "old", rate); err != nil || got.Remaining != 9 || got.Reached {
		t.Errorf("Get after Reset = %+v, %v; want 9 remaining", got, err)
	}
	// ulule's INCRBY reads this store's state, a string of digits, as a
	// count far above any Limit: it refuses, never admits.
	mine := rdb.Get(ctx, "limiter:old").Val()
	if got, err := theirs.Get(ctx, "old", rate); err != nil || !got.Reached {
		t.Errorf("ulule's Get on our state %q = %+v, %v; want Reached", mine, got, err)
	}
}

// Increment is all or none, Peek says what a Get would, and a refused
// request counts nothing.
func TestContext(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t)
	store := newStore(t, rdb)
	rate := limiter.Rate{Limit: 5, Period: time.Hour}
	peer.Room(t, time.Hour)
	type step struct {
		name  string
		call  func() (limiter.Context, error)
		left  int64
		reach bool
	}
	inc := func(n int64) func() (limiter.Context, error) {
		return func() (limiter.Context, error) { return store.Increment(ctx, "k", n, rate) }
	}
	peek := func() (limiter.Context, error) { return store.Peek(ctx, "k", rate) }
	get := func() (limiter.Context, error) { return store.Get(ctx, "k", rate) }
	for _, s := range []step{
		{"peek empty", peek, 5, false},
		{"increment 3", inc(3), 2, false},
		{"increment 3 does not fit", inc(3), 2, true},
		{"increment 0 is a peek", inc(0), 2, false},
		{"get", get, 1, false},
		{"get the last", get, 0, false},
		{"peek when none is left", peek, 0, true},
		{"get refused", get, 0, true},
		{"increment 0 when none is left", inc(0), 0, true},
	} {
		hourEnd := (time.Now().Unix()/3600 + 1) * 3600
		got, err := s.call()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := limiter.Context{Limit: 5, Remaining: s.left, Reached: s.reach, Reset: got.Reset}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
		// The window is the clock's hour, and Reset is its end; with
		// nothing counted yet, it is now.
		if s.name == "peek empty" {
			if now := time.Now().Unix(); got.Reset < now-1 || got.Reset > now+1 {
				t.Errorf("%s: Reset %d, want now (%d)", s.name, got.Reset, now)
			}
		} else if got.Reset != hourEnd {
			t.Errorf("%s: Reset %d, want the hour's end %d", s.name, got.Reset, hourEnd)
		}
	}
	// Five counted in all: the refused calls counted nothing.
	if got, err := store.Reset(ctx, "k", rate); err != nil || got.Remaining != 5 || got.Reached {
		t.Errorf("Reset = %+v, %v", got, err)
	}
}

// Bad input is refused before anything is sent; a Limit of 0 refuses
// every request, as ulule's counting does, without a round trip.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t)
	store := newStore(t, rdb)
	minute := limiter.Rate{Limit: 10, Period: time.Minute}
	for _, c := range []struct {
		name string
		call func() (limiter.Context, error)
		want error
	}{
		{"negative count", func() (limiter.Context, error) { return store.Increment(ctx, "k", -2, minute) }, redis.ErrCount},
		{"count above 1e9", func() (limiter.Context, error) { return store.Increment(ctx, "k", 1e9+1, minute) }, redis.ErrCount},
		{"negative limit", func() (limiter.Context, error) {
			return store.Get(ctx, "k", limiter.Rate{Limit: -1, Period: time.Minute})
		}, redis.ErrRate},
		{"limit above 1e9", func() (limiter.Context, error) {
			return store.Get(ctx, "k", limiter.Rate{Limit: 1e9 + 1, Period: time.Minute})
		}, redis.ErrRate},
		{"zero rate", func() (limiter.Context, error) { return store.Get(ctx, "k", limiter.Rate{}) }, redis.ErrRate},
		{"period not whole ms", func() (limiter.Context, error) {
			return store.Peek(ctx, "k", limiter.Rate{Limit: 1, Period: 1500 * time.Microsecond})
		}, redis.ErrRate},
		{"reset with a bad rate", func() (limiter.Context, error) { return store.Reset(ctx, "k", limiter.Rate{Limit: 1}) }, redis.ErrRate},
	} {
		if got, err := c.call(); !errors.Is(err, c.want) || got != (limiter.Context{}) {
			t.Errorf("%s = %+v, %v; want %v", c.name, got, err, c.want)
		}
	}
	got, err := store.Get(ctx, "k", limiter.Rate{Limit: 0, Period: time.Minute})
	if err != nil || !got.Reached || got.Remaining != 0 {
		t.Errorf("Get at Limit 0 = %+v, %v; want Reached", got, err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("refused calls left %d keys", n)
	}
}

// A call Redis runs after its caller's deadline counts nothing: here the
// server stalls (SIGSTOP) with the call queued until the deadline passes.
func TestDeadline(t *testing.T) {
	srv := redisserver.New(t)
	// No retry: one call, one EXPIRED.
	rdb := libredis.NewClient(&libredis.Options{Addr: srv.Addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	store := newStore(t, rdb)
	rate := limiter.Rate{Limit: 10, Period: time.Hour}
	peer.Room(t, time.Hour)
	bg := context.Background()
	srv.Pause()
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := store.Increment(ctx, "k", 3, rate)
		done <- err
	}()
	<-ctx.Done()
	if err := <-done; err == nil {
		t.Fatal("Increment on a stalled server returned no error")
	}
	srv.Resume()
	// The queued call runs once the server resumes: wait until Redis has
	// answered it EXPIRED, then nothing may be counted.
	for i := 0; !strings.Contains(rdb.Info(bg, "errorstats").Val(), "errorstat_EXPIRED:count=1"); i++ {
		if i == 1000 {
			t.Fatalf("Redis never answered the queued call EXPIRED:\n%s", rdb.Info(bg, "errorstats").Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := store.Peek(bg, "k", rate); err != nil || got.Remaining != 10 {
		t.Errorf("after the expired call: %+v, %v; want all 10 left", got, err)
	}
}
