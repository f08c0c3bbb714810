package bindings_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// Calls through the Functions library: load it once when the service
// starts (it replaces an older version), then pass WithFunctions(rdb)
// wherever a client goes. It needs Redis 7.0 or later, so this example has
// no output to check: miniredis has no Functions.
func ExampleWithFunctions() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	if err := bindings.LoadFunctions(ctx, rdb); err != nil {
		log.Fatal(err) // FUNCTION LOAD needs Redis 7 and, on managed services, often admin rights
	}
	fc := bindings.WithFunctions(rdb)
	res, err := bindings.TokenBucket(ctx, fc, []string{"rl:{user:42}"}, bindings.TokenBucketParams{
		Capacity: 10, Rate: 5, Period: time.Second, Refill: "smooth",
		Requests: []bindings.TokenBucketRequest{{Cost: 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Decisions[0].Allowed, res.Decisions[0].Remaining)
}
