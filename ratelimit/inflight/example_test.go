package inflight_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redlimit/redlimit/ratelimit/httplimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

func ExampleLimiter() {
	rdb := exampleRedis()
	ctx := context.Background()

	// At most 2 requests in flight per user; a lease lives 30 s unless
	// renewed, so a crashed holder frees its slot within 30 s.
	inFlight, err := inflight.New(rdb, "api", 2, 30*time.Second)
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

func ExampleMiddleware() {
	rdb := exampleRedis()
	inFlight, _ := inflight.New(rdb, "api", 1, time.Minute)

	// A handler that is still busy when the next request comes.
	busy, done := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(busy)
		<-done
	})
	handler := inflight.Middleware(inFlight, httplimit.ByHeader("X-User"))(slow)
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
