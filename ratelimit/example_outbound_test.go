package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// A third party's API takes at most 3 calls in any second, and every
// goroutine of every process calls it: a sliding log of 3 per second and
// 50 ms (the most a call may lag its decision), on one key, with Wait. The first 3 go at once; the 4th waits until the 1st leaves the
// window.
func ExampleLimiter_Wait_outbound() {
	m, _ := miniredis.Run() // its clock is the wall clock here: Wait sleeps
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	partner, _ := ratelimit.New(rdb, "partner-api",
		ratelimit.Limit{Rate: 3, Period: time.Second + 50*time.Millisecond, Burst: 3},
		ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	for call := 1; call <= 4; call++ {
		if err := partner.Wait(ctx, "partner"); err != nil {
			panic(err)
		}
		fmt.Printf("call %d at %.0f s\n", call, time.Since(start).Seconds())
	}
	// Output:
	// call 1 at 0 s
	// call 2 at 0 s
	// call 3 at 0 s
	// call 4 at 1 s
}
