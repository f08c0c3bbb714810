package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// A background job that waits for its turn instead of failing: 10 jobs
// through 5 at once and 50 a second take at least 100ms.
func ExampleLimiter_Wait() {
	m, _ := miniredis.Run() // its clock is the wall clock here: Wait sleeps
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	jobs, _ := ratelimit.New(rdb, "jobs", ratelimit.PerSecond(50).WithBurst(5))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	for i := 0; i < 10; i++ {
		if err := jobs.Wait(ctx, "reindex"); err != nil {
			panic(err)
		}
	}
	fmt.Println(time.Since(start) >= 100*time.Millisecond)

	// A wait past the deadline returns at once, counting nothing. (A
	// second: ample for the one round trip, far short of the hour.)
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// (On a stopped clock, so that the wait prints as a whole hour.)
	slow, _ := ratelimit.New(exampleRedis(), "slow", ratelimit.Per(1, time.Hour))
	slow.Allow(context.Background(), "reindex")
	fmt.Println(slow.Wait(short, "reindex"))
	// Output:
	// true
	// ratelimit: WaitN(n=1) would wait 1h0m0s, past the context's deadline: context deadline exceeded
}

// Brute-force protection: count only failed logins, and once five fail
// within 15 minutes, however paced, lock the key out for a day.
func ExampleWithLockout() {
	rdb := exampleRedis()
	ctx := context.Background()
	guard, _ := ratelimit.New(rdb, "login", ratelimit.Per(5, 15*time.Minute), ratelimit.WithLockout(24*time.Hour))

	login := func(password string) string {
		if d, _ := guard.Peek(ctx, "alice"); !d.Allowed {
			return fmt.Sprintf("locked out, retry in %v", d.RetryAfter)
		}
		if password != "s3cret" {
			guard.Allow(ctx, "alice") // a failure counts
			return "wrong password"
		}
		return "welcome"
	}
	fmt.Println(login("s3cret"))
	for i := 0; i < 5; i++ {
		login("guess")
	}
	fmt.Println(login("s3cret"))
	// Output:
	// welcome
	// locked out, retry in 24h0m0s
}

// While Redis is unreachable, keep limiting in each process at its share
// of the limit: here 2 processes, each at half of 10 a second.
func ExampleFailLocal() {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // a Redis that is not there
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)                           // a fake clock, for exact output
	limiter, _ := ratelimit.New(down, "api", ratelimit.PerSecond(10), ratelimit.WithFallback(ratelimit.FailLocal(0.5)),
		ratelimit.WithClock(func() time.Time { return now }))

	allowed := 0
	for i := 0; i < 8; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		if err != nil {
			panic(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	fmt.Println(allowed, "of 8 allowed")
	d, _ := limiter.Allow(context.Background(), "user:42")
	fmt.Println(d.Fallback, d.Limit.Burst, d.RetryAfter)
	// Output:
	// 5 of 8 allowed
	// fail-local 5 200ms
}

// A limit per call, say each customer's plan, on one state: an upgrade
// keeps what was counted.
func ExampleLimiter_WithLimit() {
	rdb := exampleRedis()
	ctx := context.Background()
	api, _ := ratelimit.New(rdb, "api", ratelimit.PerMinute(3))

	api.AllowN(ctx, "acme", 3)
	d, _ := api.Allow(ctx, "acme")
	fmt.Println("free:", d)
	pro, err := api.WithLimit(ratelimit.PerMinute(100))
	if err != nil {
		panic(err) // a limit the algorithm cannot take is refused here
	}
	d, _ = pro.Allow(ctx, "acme")
	fmt.Println("pro: ", d)
	// Output:
	// free: denied, 0 of 3 left, retry in 20s, full in 1m0s
	// pro:  allowed, 96 of 100 left, full in 2.4s
}
