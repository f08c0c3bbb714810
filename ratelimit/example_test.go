package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// exampleRedis stands in for redis.NewClient(&redis.Options{Addr:
// "localhost:6379"}): an in-process miniredis whose clock stands still, so
// that the examples print exact waits. A real server's clock moves on.
func exampleRedis() *redis.Client {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return redis.NewClient(&redis.Options{Addr: m.Addr()})
}

func Example() {
	rdb := exampleRedis()
	ctx := context.Background()

	// 2 requests per second, 2 at once, with GCRA (the default algorithm).
	limiter, err := ratelimit.New(rdb, ratelimit.PerSecond(2))
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
	_, err := ratelimit.New(rdb, ratelimit.PerMinute(100), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	fmt.Println(err)

	// A burst means nothing to a window: New says so instead of guessing.
	_, err = ratelimit.New(rdb, ratelimit.PerMinute(100).WithBurst(20), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	fmt.Println(err)

	// Neither does a forgotten field: a zero never turns limiting off.
	_, err = ratelimit.New(rdb, ratelimit.Limit{Rate: 10, Period: time.Second})
	fmt.Println(err)
	// Output:
	// <nil>
	// ratelimit: fixed_window limit {100 per 1m0s, burst 20}: Burst must equal Rate: a window algorithm admits Rate per Period, all at once if they come at once
	// ratelimit: gcra limit {10 per 1s, burst 0}: Burst must be from 1 to 1e9 (PerSecond and the like set it to the rate)
}

func ExampleLimiter_AllowN() {
	rdb := exampleRedis()
	ctx := context.Background()

	// A token bucket of 10 tokens that gains 1 a second.
	bucket, _ := ratelimit.New(rdb, ratelimit.PerSecond(1).WithBurst(10), ratelimit.WithAlgorithm(ratelimit.TokenBucket))

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
	// ratelimit: invalid cost: n = 0, want 1 to 1e9 (Peek looks without counting)
}

func ExampleLimiter_Peek() {
	rdb := exampleRedis()
	ctx := context.Background()
	limiter, _ := ratelimit.New(rdb, ratelimit.PerMinute(2))

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
	limiter, _ := ratelimit.New(rdb, ratelimit.PerHour(1))

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
	limiter, _ := ratelimit.New(rdb, ratelimit.PerHour(1), ratelimit.WithDenyCache(10000),
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

func ExampleLimiter_RedisKey() {
	rdb := exampleRedis()
	limiter, _ := ratelimit.New(rdb, ratelimit.PerSecond(5), ratelimit.WithName("api"))

	// The whole key is the {hash tag}; braces in it cannot move the tag.
	fmt.Println(limiter.RedisKey("user:42"))
	fmt.Println(limiter.RedisKey("evil}{key"))
	// Output:
	// rl:api:{user:42}
	// rl:api:{evil%7D%7Bkey}
}

func ExampleAllowAll() {
	rdb := exampleRedis()
	ctx := context.Background()

	// At most 2 a second and 3 a day, checked in one round trip.
	perSecond, _ := ratelimit.New(rdb, ratelimit.PerSecond(2), ratelimit.WithName("per-second"))
	perDay, _ := ratelimit.New(rdb, ratelimit.PerDay(3), ratelimit.WithName("per-day"), ratelimit.WithAlgorithm(ratelimit.FixedWindow))

	for i := 0; i < 3; i++ {
		ds, err := ratelimit.AllowAll(ctx, "dave", perSecond, perDay)
		if err != nil {
			panic(err)
		}
		fmt.Printf("second: %v | day: %v\n", ds[0].Allowed, ds[1].Allowed)
	}
	// Output:
	// second: true | day: true
	// second: true | day: true
	// second: false | day: true
}

func ExampleTiers() {
	rdb := exampleRedis()
	free, _ := ratelimit.New(rdb, ratelimit.PerMinute(2), ratelimit.WithName("free"))
	pro, _ := ratelimit.New(rdb, ratelimit.PerMinute(100), ratelimit.WithName("pro"))

	tiers := ratelimit.Tiers{
		// In an app the plan comes from the authenticated account.
		Tier:    func(r *http.Request) string { return r.Header.Get("X-Plan") },
		Rules:   map[string]ratelimit.Rule{"free": free, "pro": pro},
		Default: "free",
	}
	h := ratelimit.Middleware(tiers, ratelimit.ByHeader("X-User"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, plan := range []string{"free", "free", "free", "pro", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-User", "erin")
		req.Header.Set("X-Plan", plan)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%-4s %d %s\n", plan, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// free 200 "free";r=1;t=30
	// free 200 "free";r=0;t=60
	// free 429 "free";r=0;t=30
	// pro  200 "pro";r=99;t=1
	//      429 "free";r=0;t=30
}

func ExampleMiddleware() {
	rdb := exampleRedis()
	limiter, err := ratelimit.New(rdb, ratelimit.PerMinute(2), ratelimit.WithName("api"))
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := ratelimit.Middleware(limiter, ratelimit.ByClientIP())(hello)

	for i := 0; i < 3; i++ {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		h := rec.Header()
		fmt.Printf("%d RateLimit-Policy: %s | RateLimit: %s | Retry-After: %q\n",
			rec.Code, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"))
		if rec.Code != http.StatusOK {
			fmt.Print(h.Get("Content-Type"), " ", rec.Body.String())
		}
	}
	// Output:
	// 200 RateLimit-Policy: "api";q=2;w=60 | RateLimit: "api";r=1;t=30 | Retry-After: ""
	// 200 RateLimit-Policy: "api";q=2;w=60 | RateLimit: "api";r=0;t=60 | Retry-After: ""
	// 429 RateLimit-Policy: "api";q=2;w=60 | RateLimit: "api";r=0;t=30 | Retry-After: "30"
	// application/problem+json {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Retry in 30 s.","violated-policies":["api"]}
}

func ExampleMiddleware_perRoute() {
	rdb := exampleRedis()
	login, _ := ratelimit.New(rdb, ratelimit.PerMinute(1), ratelimit.WithName("login"))
	search, _ := ratelimit.New(rdb, ratelimit.PerSecond(10), ratelimit.WithName("search"))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

	// Each route's handler gets its own limiter; works with any router.
	mux := http.NewServeMux()
	mux.Handle("/login", ratelimit.Middleware(login, ratelimit.ByClientIP())(ok))
	mux.Handle("/search", ratelimit.Middleware(search, ratelimit.ByClientIP())(ok))

	for _, path := range []string{"/login", "/login", "/search"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, rec.Code)
	}
	// Output:
	// /login 200
	// /login 429
	// /search 200
}

func ExampleOnFailure() {
	// A Redis that is not there; MaxRetries -1 gives up at once.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	ctx := context.Background()

	open, _ := ratelimit.New(down, ratelimit.PerSecond(10), ratelimit.OnFailure(ratelimit.FailOpen), ratelimit.WithTimeout(50*time.Millisecond))
	closed, _ := ratelimit.New(down, ratelimit.PerSecond(10), ratelimit.OnFailure(ratelimit.FailClosed), ratelimit.WithTimeout(50*time.Millisecond))
	strict, _ := ratelimit.New(down, ratelimit.PerSecond(10))

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
			logger.ErrorContext(ctx, "rate limit failed", "limiter", e.Limiter.Name(), "key", e.Key, "err", e.Err)
		case e.Decision.Fallback != ratelimit.NoFallback:
			logger.WarnContext(ctx, "rate limit fallback", "limiter", e.Limiter.Name(), "key", e.Key, "fallback", e.Decision.Fallback, "cause", e.Decision.Cause)
		case !e.Decision.Allowed:
			logger.InfoContext(ctx, "rate limited", "limiter", e.Limiter.Name(), "key", e.Key,
				"retry_after", e.Decision.RetryAfter, "took", e.Duration)
		}
	}
	limiter, _ := ratelimit.New(rdb, ratelimit.PerMinute(1), ratelimit.WithName("api"), ratelimit.WithHook(logDecision))

	ctx := context.Background()
	limiter.Allow(ctx, "grace")
	limiter.Allow(ctx, "grace")
	// Output:
	// level=INFO msg="rate limited" limiter=api key=grace retry_after=1m0s
}
