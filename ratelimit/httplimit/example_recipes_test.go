package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// call sends a request through h and returns the status code.
func call(h http.Handler, method, path string, header ...string) int {
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

// 10 a second per user, the user named by a header your auth proxy sets.
func ExampleByHeader() {
	rdb := exampleRedis()
	perUser, err := ratelimit.New(rdb, "per-user", ratelimit.PerSecond(10))
	if err != nil {
		panic(err)
	}
	h := httplimit.Middleware(perUser, httplimit.ByHeader("X-User-ID"))(hello)

	var codes []int
	for i := 0; i < 11; i++ {
		codes = append(codes, call(h, "GET", "/", "X-User-ID", "alice"))
	}
	fmt.Println(codes[9], codes[10], call(h, "GET", "/", "X-User-ID", "bob"), call(h, "GET", "/"))
	// Output: 200 429 200 400
}

// Login 5 a minute per client address, everything else 100 a minute: a
// limiter per route, each wrapping its route's handler.
func ExampleMiddleware_login() {
	rdb := exampleRedis()
	login, _ := ratelimit.New(rdb, "login", ratelimit.PerMinute(5))
	api, _ := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
	byIP := httplimit.ByClientIP() // behind a proxy: ByClientIP(netip.MustParsePrefix("10.0.0.0/8"))

	mux := http.NewServeMux()
	mux.Handle("POST /login", httplimit.Middleware(login, byIP)(hello))
	mux.Handle("/", httplimit.Middleware(api, byIP)(hello))

	var codes []int
	for i := 0; i < 6; i++ {
		codes = append(codes, call(mux, "POST", "/login"))
	}
	fmt.Println(codes, call(mux, "GET", "/items"))
	// Output: [200 200 200 200 200 429] 200
}

// One limiter, each route pattern counted apart: /users/1 and /users/2
// share the bucket of "GET /users/{id}". Another router names its pattern
// with SetRoute (the adapters do); without one, ByRoute answers 500.
func ExampleByRoute() {
	rdb := exampleRedis()
	perRoute, _ := ratelimit.New(rdb, "per-route", ratelimit.PerMinute(2))
	mw := httplimit.Middleware(perRoute, httplimit.ByRoute(httplimit.ByClientIP()))

	mux := http.NewServeMux()
	mux.Handle("GET /users/{id}", mw(hello)) // wrap the route, not the mux (Go 1.23+)
	mux.Handle("GET /teams/{id}", mw(hello))
	fmt.Println(call(mux, "GET", "/users/1"), call(mux, "GET", "/users/2"), call(mux, "GET", "/users/3"), call(mux, "GET", "/teams/1"))

	// A router of another kind, here a stand-in that knows its pattern.
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw(hello).ServeHTTP(w, httplimit.SetRoute(r, "/orders/:id"))
	})
	fmt.Println(call(other, "GET", "/orders/1"), call(other, "GET", "/orders/2"), call(other, "GET", "/orders/3"))
	fmt.Println(call(mw(mux), "GET", "/users/1")) // around the mux: no pattern yet
	// Output:
	// 200 200 429 200
	// 200 200 429
	// 500
}

// Health checks and an allowlist pass unlimited, with no rate-limit header
// fields: WithSkip by request, or a Select that returns Unlimited by key.
func ExampleWithSkip() {
	rdb := exampleRedis()
	api, _ := ratelimit.New(rdb, "api", ratelimit.PerMinute(1))
	allowlist := map[string]bool{"ip:10.1.2.3": true}
	rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
		if allowlist[key] {
			return ratelimit.Unlimited, nil
		}
		return api, nil
	})
	health := httplimit.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" })
	h := httplimit.Middleware(rule, httplimit.ByClientIP(), health)(hello)

	fmt.Println(call(h, "GET", "/"), call(h, "GET", "/"), call(h, "GET", "/healthz"), call(h, "GET", "/healthz"))
	internal := httptest.NewRequest("GET", "/", nil)
	internal.RemoteAddr = "10.1.2.3:5000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, internal)
	fmt.Printf("%d %q\n", rec.Code, rec.Header().Get("RateLimit-Policy"))
	// Output:
	// 200 429 200 200
	// 200 ""
}

// Brute-force protection: only failed logins count, and five failures in
// any 15 minutes, however paced, lock the address out for a day, whatever
// the password then.
func ExampleWithCountIf() {
	// The example's Redis runs at 2026-01-01 00:00 UTC, and the limiter
	// reads that clock too; with a real server, leave WithClock out.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	guard, _ := ratelimit.New(exampleRedis(), "login", ratelimit.Per(5, 15*time.Minute), ratelimit.WithLockout(24*time.Hour),
		ratelimit.WithClock(func() time.Time { return now }))
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Password") != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	failed := httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized })
	h := httplimit.Middleware(guard, httplimit.ByClientIP(), failed)(login)

	var codes []int
	for _, password := range []string{"s3cret", "s3cret", "a", "b", "c", "d", "e", "s3cret"} {
		codes = append(codes, call(h, "POST", "/login", "X-Password", password))
	}
	fmt.Println(codes)
	// Output: [200 200 401 401 401 401 401 429]
}

// Brute force, exact: each login is reserved before the handler, so 200
// wrong passwords at once let 5 reach it, and the fifth starts the
// lockout. A right password gives its attempt back.
func ExampleWithCountIf_atOnce() {
	rdb := exampleRedis()
	guard, _ := ratelimit.New(rdb, "login", ratelimit.Per(5, 15*time.Minute),
		ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(24*time.Hour))
	var mu sync.Mutex
	reached := 0
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		mu.Unlock()
		if r.Header.Get("X-Password") != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	failed := httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized })
	h := httplimit.Middleware(guard, httplimit.ByClientIP(), failed)(login)

	fmt.Println(call(h, "POST", "/login", "X-Password", "s3cret"), call(h, "POST", "/login", "X-Password", "s3cret"))
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); call(h, "POST", "/login", "X-Password", "guess") }()
	}
	wg.Wait()
	fmt.Println(reached-2, "of 200 guesses reached the handler")
	fmt.Println(call(h, "POST", "/login", "X-Password", "s3cret"))
	// Output:
	// 200 200
	// 5 of 200 guesses reached the handler
	// 429
}
