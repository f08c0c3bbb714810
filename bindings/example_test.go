package bindings_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// exampleRedis is an embedded miniredis with its clock stopped, so the
// examples' output does not depend on when they run. The scripts read the
// server's TIME, which follows miniredis's SetTime.
func exampleRedis() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	m.SetTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() { rdb.Close(); m.Close() }
}

// The token bucket: 10 tokens, 5 more per second. A call decides its
// requests in order, each as a call of its own at that instant would be: a
// cost is how many tokens a request takes (0 only peeks). Now is the zero
// time.Time, so the script uses the server's clock.
func ExampleTokenBucket() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	p := bindings.TokenBucketParams{
		Capacity: 10, Rate: 5, Period: time.Second, Refill: bindings.TokenBucketRefillSmooth,
		Requests: []bindings.TokenBucketRequest{{Cost: 4}, {Cost: 4}, {Cost: 4}},
	}
	res, err := bindings.TokenBucket(ctx, rdb, []string{"rl:{user:42}"}, p)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range res.Decisions {
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)
	}
	// Output:
	// 1 6 0s 800ms
	// 1 2 0s 1.6s
	// 0 2 400ms 1.6s
}

// GCRA lets burst requests through at once, then one per period/rate. A
// cost above the burst can never pass: RetryAfter is -1 ms, the scripts'
// "never" (package ratelimit turns it into ratelimit.Never).
func ExampleGCRA() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	p := bindings.GCRAParams{Burst: 2, Rate: 1, Period: time.Second, Take: bindings.GCRATakeAll,
		Requests: []bindings.GCRARequest{{Cost: 1}, {Cost: 1}, {Cost: 1}, {Cost: 3}}}
	res, err := bindings.GCRA(ctx, rdb, []string{"gcra:{user:42}"}, p)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range res.Decisions {
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// 1 1 0s
	// 1 0 0s
	// 0 0 1s
	// 0 0 -1ms
}

// Take at_most takes what is left, up to a request's cost, and answers
// how many it took (go-redis/redis_rate's AllowAtMost); a request its
// caller gave up on before Redis ran it (its Deadline passed) counts
// nothing and answers GCRADecisionAllowedExpired.
func ExampleGCRA_atMost() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	gone := time.Date(2026, 12, 1, 11, 59, 59, 0, time.UTC) // before the example's clock
	p := bindings.GCRAParams{Burst: 5, Rate: 5, Period: time.Second, Take: bindings.GCRATakeAtMost,
		Requests: []bindings.GCRARequest{{Cost: 3}, {Cost: 1, Deadline: gone}, {Cost: 3}, {Cost: 3}}}
	res, err := bindings.GCRA(ctx, rdb, []string{"gcra:{user:7}"}, p)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range res.Decisions {
		fmt.Println(d.Allowed, d.Allowed == bindings.GCRADecisionAllowedExpired, d.Remaining, d.RetryAfter)
	}
	// Output:
	// 3 false 2 0s
	// -1 true 0 0s
	// 2 false 0 0s
	// 0 false 0 200ms
}

// Errors: a parameter outside the bounds the header declares is refused in
// Go before anything is sent (*ArgError); what only the script can judge,
// such as a bucket that would take more than 31 years to fill, comes back
// as a *ScriptError that matches ErrBadArg; a key that holds something else
// is left untouched and matches ErrWrongType.
func ExampleScriptError() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	_, err := bindings.FixedWindow(ctx, rdb, "fw:{a}", bindings.FixedWindowParams{Limit: 0, Window: time.Minute, Cost: 1})
	var ae *bindings.ArgError
	fmt.Println(errors.As(err, &ae), err)

	_, err = bindings.TokenBucket(ctx, rdb, []string{"tb:{a}"}, bindings.TokenBucketParams{
		Capacity: 1e9, Rate: 1, Period: 1e11 * time.Millisecond,
		Refill: bindings.TokenBucketRefillSmooth, Requests: []bindings.TokenBucketRequest{{Cost: 1}},
	})
	fmt.Println(errors.Is(err, bindings.ErrBadArg))

	// A key that holds something else is refused and left as it was: a
	// string that is not a window is ErrBadState, another type ErrWrongType.
	rdb.Set(ctx, "fw:{b}", "not a counter", 0)
	_, err = bindings.FixedWindow(ctx, rdb, "fw:{b}", bindings.FixedWindowParams{Limit: 5, Window: time.Minute, Cost: 1})
	fmt.Println(errors.Is(err, bindings.ErrBadState), rdb.Get(ctx, "fw:{b}").Val())
	rdb.RPush(ctx, "fw:{c}", "a list")
	_, err = bindings.FixedWindow(ctx, rdb, "fw:{c}", bindings.FixedWindowParams{Limit: 5, Window: time.Minute, Cost: 1})
	fmt.Println(errors.Is(err, bindings.ErrWrongType), rdb.LRange(ctx, "fw:{c}", 0, -1).Val())
	// Output:
	// true fixed_window.lua: argument limit: 0 is out of range [1..1000000000]
	// true
	// true not a counter
	// true [a list]
}

// A Batch sends many calls in one pipeline; each Pending holds its own
// result once Exec returns. Calls the server answers NOSCRIPT (after a
// restart or SCRIPT FLUSH) are sent again as EVAL, so a batch never needs
// LoadAll first.
func ExampleBatch() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	b := bindings.NewBatch()
	perSecond := b.GCRA([]string{"rl:{user:42}:s"}, bindings.GCRAParams{Burst: 10, Rate: 10, Period: time.Second,
		Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 1}}})
	perDay := b.FixedWindow("rl:{user:42}:d", bindings.FixedWindowParams{Limit: 1000, Window: 24 * time.Hour, Cost: 1})
	if err := b.Exec(ctx, rdb); err != nil {
		log.Fatal(err)
	}
	s, _ := perSecond.Result()
	d, _ := perDay.Result()
	fmt.Println(s.Decisions[0].Allowed, s.Decisions[0].Remaining, d.Allowed, d.Remaining, d.ResetAfter)
	// Output:
	// 1 9 true 999 12h0m0s
}
