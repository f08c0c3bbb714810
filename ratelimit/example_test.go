package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

func Example() {
	rdb := exampleRedis()
	ctx := context.Background()

	// 2 requests per second, 2 at once, with GCRA (the default algorithm).
	limiter, err := ratelimit.New(rdb, "test", ratelimit.PerSecond(2))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(d)
	}
	// Output:
	// allowed, 1 of 2 left, full in 500ms
	// allowed, 0 of 2 left, full in 1s
	// denied, 0 of 2 left, retry in 500ms, full in 1s
}

func ExampleNew_algorithm() {
	rdb := exampleRedis()

	// A fixed window of 100 requests per minute.
	_, err := ratelimit.New(rdb, "test", ratelimit.PerMinute(100), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	fmt.Println(err)

	// A burst means nothing to a window: New says so instead of guessing.
	_, err = ratelimit.New(rdb, "test", ratelimit.PerMinute(100).WithBurst(20), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	fmt.Println(err)

	// Neither does a forgotten field: a zero never turns limiting off.
	_, err = ratelimit.New(rdb, "test", ratelimit.Limit{Rate: 10, Period: time.Second})
	fmt.Println(err)
	// Output:
	// <nil>
	// ratelimit: invalid: fixed_window limit {100 per 1m0s, burst 20}: Burst must equal Rate: a window algorithm admits Rate per Period, all at once if they come at once
	// ratelimit: invalid: gcra limit {10 per 1s, burst 0}: Burst must be from 1 to 1e9 (PerSecond and the like set it to the rate)
}

func ExampleLimiter_AllowN() {
	rdb := exampleRedis()
	ctx := context.Background()

	// A token bucket of 10 tokens that gains 1 a second.
	bucket, _ := ratelimit.New(rdb, "test", ratelimit.PerSecond(1).WithBurst(10), ratelimit.WithAlgorithm(ratelimit.TokenBucket))

	d, _ := bucket.AllowN(ctx, "upload:alice", 8)
	fmt.Println(d)
	d, _ = bucket.AllowN(ctx, "upload:alice", 5)
	fmt.Println(d)
	// More than the bucket holds can never pass: no fake wait.
	d, _ = bucket.AllowN(ctx, "upload:alice", 11)
	fmt.Println(d, d.RetryAfter == ratelimit.Never)
	// There is no cost that only looks.
	_, err := bucket.AllowN(ctx, "upload:alice", 0)
	fmt.Println(err)
	// Output:
	// allowed, 2 of 10 left, full in 8s
	// denied, 2 of 10 left, retry in 3s, full in 8s
	// denied, 2 of 10 left, can never pass, full in 8s true
	// ratelimit: invalid: cost n = 0, want 1 to 1e9 (Peek looks without counting)
}

func ExampleLimiter_Peek() {
	rdb := exampleRedis()
	ctx := context.Background()
	limiter, _ := ratelimit.New(rdb, "test", ratelimit.PerMinute(2))

	limiter.Allow(ctx, "bob")
	for i := 0; i < 3; i++ { // peeking counts nothing
		d, _ := limiter.Peek(ctx, "bob")
		fmt.Println(d)
	}
	// Output:
	// allowed, 1 of 2 left, full in 30s
	// allowed, 1 of 2 left, full in 30s
	// allowed, 1 of 2 left, full in 30s
}

func ExampleLimiter_Reset() {
	rdb := exampleRedis()
	ctx := context.Background()
	limiter, _ := ratelimit.New(rdb, "test", ratelimit.Per(1, time.Hour))

	d, _ := limiter.Allow(ctx, "carol")
	fmt.Println(d.Allowed)
	d, _ = limiter.Allow(ctx, "carol")
	fmt.Println(d.Allowed)
	if err := limiter.Reset(ctx, "carol"); err != nil {
		panic(err)
	}
	d, _ = limiter.Allow(ctx, "carol")
	fmt.Println(d.Allowed)
	// Output:
	// true
	// false
	// true
}

// A flood from a client over its limit: after Redis's first denial the
// limiter answers itself until the wait is over, with no round trip.
func ExampleWithDenyCache() {
	rdb := exampleRedis()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a fake clock, for exact output
	limiter, _ := ratelimit.New(rdb, "test", ratelimit.Per(1, time.Hour), ratelimit.WithDenyCache(10000),
		ratelimit.WithClock(func() time.Time { return now }))

	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(ctx, "dave")
		fmt.Println(d)
	}
	now = now.Add(30 * time.Second)
	d, _ := limiter.Allow(ctx, "dave")
	fmt.Println(d, d.Cached)
	// Output:
	// allowed, 0 of 1 left, full in 1h0m0s
	// denied, 0 of 1 left, retry in 1h0m0s, full in 1h0m0s
	// denied by the deny cache, 0 of 1 left, retry in 1h0m0s, full in 1h0m0s
	// denied by the deny cache, 0 of 1 left, retry in 59m30s, full in 59m30s true
}

func ExampleAll() {
	rdb := exampleRedis()
	ctx := context.Background()

	// At most 2 a second and 3 a day, checked in one round trip; not
	// atomic: a request one denies still counts in the other.
	perSecond, _ := ratelimit.New(rdb, "per-second", ratelimit.PerSecond(2))
	perDay, _ := ratelimit.New(rdb, "per-day", ratelimit.Per(3, 24*time.Hour), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	both, err := ratelimit.All(perSecond, perDay)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, err := both.AllowN(ctx, "dave", 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("second: %v | day: %v | %v\n", d.Parts[0].Allowed, d.Parts[1].Allowed, d)
	}
	// Output:
	// second: true | day: true | allowed, 1 of 2 left, full in 500ms (per-second)
	// second: true | day: true | allowed, 0 of 2 left, full in 1s (per-second)
	// second: false | day: true | denied, 0 of 2 left, retry in 500ms, full in 1s (per-second)
}

// Plans chosen per call: one limiter, one state per customer, the limit of
// the customer's plan; an unknown key is refused, an internal one skipped.
func ExampleSelect() {
	rdb := exampleRedis()
	ctx := context.Background()
	plans := map[string]ratelimit.Limit{"free": ratelimit.PerMinute(2), "pro": ratelimit.PerMinute(100)}
	planOf := map[string]string{"key-a": "free", "key-b": "pro"} // your accounts
	errUnknownKey := errors.New("unknown API key")

	api, err := ratelimit.New(rdb, "api", plans["free"])
	if err != nil {
		panic(err)
	}
	rule := ratelimit.Select(func(ctx context.Context, apiKey string) (ratelimit.Rule, error) {
		if apiKey == "internal" {
			return ratelimit.Unlimited, nil
		}
		plan, ok := planOf[apiKey]
		if !ok {
			return nil, errUnknownKey // no bucket is made for it
		}
		return api.WithLimit(plans[plan])
	})
	for _, key := range []string{"key-a", "key-a", "key-a", "key-b", "internal", "key-z"} {
		d, err := rule.AllowN(ctx, key, 1)
		if err != nil {
			fmt.Printf("%-8s refused: %v\n", key, err)
			continue
		}
		fmt.Printf("%-8s %v\n", key, d)
	}
	// key-a upgrades: its state carries over to the new limit.
	planOf["key-a"] = "pro"
	d, _ := rule.AllowN(ctx, "key-a", 1)
	fmt.Println("key-a   ", d)
	// Output:
	// key-a    allowed, 1 of 2 left, full in 30s
	// key-a    allowed, 0 of 2 left, full in 1m0s
	// key-a    denied, 0 of 2 left, retry in 30s, full in 1m0s
	// key-b    allowed, 99 of 100 left, full in 600ms
	// internal allowed, unlimited
	// key-z    refused: unknown API key
	// key-a    allowed, 97 of 100 left, full in 1.8s
}

func ExampleWithFallback() {
	// A Redis that is not there; MaxRetries -1 gives up at once.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	ctx := context.Background()

	open, _ := ratelimit.New(down, "test", ratelimit.PerSecond(10), ratelimit.WithFallback(ratelimit.FailOpen), ratelimit.WithTimeout(50*time.Millisecond))
	closed, _ := ratelimit.New(down, "test", ratelimit.PerSecond(10), ratelimit.WithFallback(ratelimit.FailClosed), ratelimit.WithTimeout(50*time.Millisecond))
	strict, _ := ratelimit.New(down, "test", ratelimit.PerSecond(10))

	d, err := open.Allow(ctx, "frank")
	fmt.Println(d.Allowed, d.Fallback, d.Cause != nil, err)
	d, err = closed.Allow(ctx, "frank")
	fmt.Println(d.Allowed, d.Fallback, d.Cause != nil, err)
	_, err = strict.Allow(ctx, "frank")
	fmt.Println(err != nil)
	// Output:
	// true fail-open true <nil>
	// false fail-closed true <nil>
	// true
}

// Two hooks, called in order: a log of denials and failures that says who
// decided each (Decision.Source), and a count by source, as a metric would
// keep.
func ExampleWithHook() {
	rdb := exampleRedis()
	// A text logger without timestamps, so the output is stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "took" {
				return slog.Attr{}
			}
			return a
		},
	}))
	logDecision := func(ctx context.Context, e ratelimit.Event) {
		switch {
		case e.Err != nil:
			logger.ErrorContext(ctx, "rate limit failed", "limiter", e.Name, "key", e.Key, "err", e.Err)
		case e.Decision.Cause != nil:
			logger.WarnContext(ctx, "rate limit fallback", "limiter", e.Name, "key", e.Key, "source", e.Decision.Source, "cause", e.Decision.Cause)
		case !e.Decision.Allowed:
			logger.InfoContext(ctx, "rate limited", "limiter", e.Name, "key", e.Key, "source", e.Decision.Source,
				"retry_after", e.Decision.RetryAfter.Round(time.Second), "took", e.Duration)
		}
	}
	bySource := map[string]int{}
	count := func(_ context.Context, e ratelimit.Event) { bySource[e.Decision.Source]++ }
	limiter, _ := ratelimit.New(rdb, "api", ratelimit.PerMinute(1), ratelimit.WithDenyCache(100),
		ratelimit.WithHook(logDecision), ratelimit.WithHook(count))

	ctx := context.Background()
	limiter.Allow(ctx, "grace")
	limiter.Allow(ctx, "grace") // Redis denies, and the deny cache keeps it
	limiter.Allow(ctx, "grace") // the deny cache denies
	fmt.Println(bySource)
	// Output:
	// level=INFO msg="rate limited" limiter=api key=grace source=redis retry_after=1m0s
	// level=INFO msg="rate limited" limiter=api key=grace source=deny-cache retry_after=1m0s
	// map[deny-cache:1 redis:2]
}
