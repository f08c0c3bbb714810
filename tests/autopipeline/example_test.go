package autopipeline

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// Opting into go-redis's AutoPipeliner (go-redis v9.22 or later, Go 1.26):
// pass it where a client goes. Concurrent decisions are then coalesced
// into pipelines; each caller still gets its own Decision.
func Example() {
	m, _ := miniredis.Run() // or your Redis
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	ap, err := rdb.AutoPipeline() // experimental in go-redis
	if err != nil {
		panic(err)
	}
	defer ap.Close()
	limiter, err := ratelimit.New(ap, "api", ratelimit.PerMinute(100))
	if err != nil {
		panic(err)
	}
	d, err := limiter.Allow(context.Background(), "user:42")
	fmt.Println(d.Allowed, d.Remaining, err)
	// Output: true 99 <nil>
}
