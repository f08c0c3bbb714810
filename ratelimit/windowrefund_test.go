package ratelimit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// A sliding log reservation on a fresh key, with this process's clock, is
// usually judged at the server's TIME, a little after the clock Reserve
// sent; its Cancel must still give it back. 20 fresh keys, each checked by
// a Peek that must see the full limit again.
func TestSlidingLogCancelOnFreshKeyOnRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	ctx := context.Background()
	const limit = 5
	l, err := ratelimit.New(rdb, "logcancel", ratelimit.PerMinute(limit), ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("fresh-%d", i)
		r, err := l.Reserve(ctx, key, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Decision.Allowed {
			t.Fatalf("%s: Reserve(1) on a fresh key: %v", key, r.Decision)
		}
		if err := r.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		d, err := l.Peek(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if d.Remaining != limit {
			t.Fatalf("%s: Peek after Cancel: %v, want %d left", key, d, limit)
		}
	}
}
