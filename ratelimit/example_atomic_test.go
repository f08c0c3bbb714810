package ratelimit_test

import (
	"context"
	"fmt"

	"github.com/redlimit/redlimit/ratelimit"
)

func ExampleAtomic() {
	rdb := exampleRedis()
	ctx := context.Background()

	// 2 a second AND 3 a minute for each user, as one atomic check.
	perSecond, _ := ratelimit.New(rdb, "per-second", ratelimit.PerSecond(2))
	perMinute, _ := ratelimit.New(rdb, "per-minute", ratelimit.PerMinute(3))
	both, err := ratelimit.Atomic(perSecond, perMinute)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := both.Allow(ctx, "alice")
		fmt.Printf("second: %v | minute: %v\n", d.Parts[0], d.Parts[1])
	}
	// The third was denied by the second's limit, so the minute's quota
	// was not spent on it: one is left.
	d, _ := perMinute.Peek(ctx, "alice")
	fmt.Println("minute alone:", d.Remaining, "left")
	// Output:
	// second: allowed, 1 of 2 left, full in 500ms | minute: allowed, 2 of 3 left, full in 20s
	// second: allowed, 0 of 2 left, full in 1s | minute: allowed, 1 of 3 left, full in 40s
	// second: denied, 0 of 2 left, retry in 500ms, full in 1s | minute: allowed, 1 of 3 left, full in 40s
	// minute alone: 1 left
}
