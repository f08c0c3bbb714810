package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

func ExampleMulti() {
	rdb := exampleRedis()
	ctx := context.Background()

	// 2 a second AND 3 a minute for each user, as one atomic check.
	perSecond, _ := ratelimit.New(rdb, ratelimit.PerSecond(2), ratelimit.WithName("per-second"))
	perMinute, _ := ratelimit.New(rdb, ratelimit.PerMinute(3), ratelimit.WithName("per-minute"))
	both, err := ratelimit.NewMulti(perSecond, perMinute)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		ds, _ := both.Allow(ctx, "alice")
		fmt.Printf("second: %v | minute: %v\n", ds[0], ds[1])
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

func ExampleMulti_middleware() {
	rdb := exampleRedis()
	perSecond, _ := ratelimit.New(rdb, ratelimit.PerSecond(1), ratelimit.WithName("burst"))
	perDay, _ := ratelimit.New(rdb, ratelimit.PerDay(1000), ratelimit.WithName("daily"))
	both, _ := ratelimit.NewMulti(perSecond, perDay)
	handler := ratelimit.Middleware(both, ratelimit.ByHeader("X-API-Key"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for i := 0; i < 2; i++ {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-API-Key", "k1")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
		fmt.Println("   ", rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "burst";q=1;w=1, "daily";q=1000;w=86400
	//     "burst";r=0;t=1, "daily";r=999;t=87
	// 429 "burst";q=1;w=1, "daily";q=1000;w=86400
	//     "burst";r=0;t=1, "daily";r=999;t=87
}

func ExampleConcurrencyLimiter() {
	rdb := exampleRedis()
	ctx := context.Background()

	// At most 2 requests in flight per user; a lease lives 30 s unless
	// renewed, so a crashed holder frees its slot within 30 s.
	inFlight, err := ratelimit.NewConcurrency(rdb, 2, 30*time.Second)
	if err != nil {
		panic(err)
	}
	a, d, _ := inFlight.Acquire(ctx, "user:42")
	fmt.Println(d)
	b, d, _ := inFlight.Acquire(ctx, "user:42")
	fmt.Println(d)
	c, d, _ := inFlight.Acquire(ctx, "user:42")
	fmt.Println(d, c == nil)

	fmt.Println(a.Release(ctx), a.Release(ctx)) // idempotent
	_, d, _ = inFlight.Acquire(ctx, "user:42")
	fmt.Println(d)
	fmt.Println(b.Renew(ctx), len(b.ID()))
	// Output:
	// allowed, 1 of 2 left, full in 30s
	// allowed, 0 of 2 left, full in 30s
	// denied, 0 of 2 left, retry in 30s, full in 30s true
	// <nil> <nil>
	// allowed, 0 of 2 left, full in 30s
	// <nil> 32
}

func ExampleConcurrencyMiddleware() {
	rdb := exampleRedis()
	inFlight, _ := ratelimit.NewConcurrency(rdb, 1, time.Minute)

	// A handler that is still busy when the next request comes.
	busy, done := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(busy)
		<-done
	})
	handler := ratelimit.ConcurrencyMiddleware(inFlight, ratelimit.ByHeader("X-User"))(slow)
	request := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-User", "bob")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}

	first := make(chan int)
	go func() { first <- request().Code }()
	<-busy
	second := request()
	fmt.Println(second.Code, second.Header().Get("Retry-After"))
	close(done)
	fmt.Println(<-first)
	// The first request released its lease when its handler returned.
	busy, done = make(chan struct{}), make(chan struct{})
	close(done)
	fmt.Println(request().Code)
	// Output:
	// 429 1
	// 200
	// 200
}
