package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

func ExampleMiddleware() {
	rdb := exampleRedis()
	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(2))
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := httplimit.Middleware(limiter, httplimit.ByClientIP())(hello)

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
	login, _ := ratelimit.New(rdb, "login", ratelimit.PerMinute(1))
	search, _ := ratelimit.New(rdb, "search", ratelimit.PerSecond(10))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

	// Each route's handler gets its own limiter; works with any router.
	mux := http.NewServeMux()
	mux.Handle("/login", httplimit.Middleware(login, httplimit.ByClientIP())(ok))
	mux.Handle("/search", httplimit.Middleware(search, httplimit.ByClientIP())(ok))

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

func ExampleMiddleware_multi() {
	rdb := exampleRedis()
	perSecond, _ := ratelimit.New(rdb, "burst", ratelimit.PerSecond(1))
	perDay, _ := ratelimit.New(rdb, "daily", ratelimit.Per(1000, 24*time.Hour))
	both, _ := ratelimit.Atomic(perSecond, perDay)
	handler := httplimit.Middleware(both, httplimit.ByHeader("X-API-Key"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

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

// Plans by API key: one limiter, the plan's limit per call; an unknown key
// goes to the error handler (here a 401), never to a fresh bucket.
func ExampleMiddleware_plans() {
	rdb := exampleRedis()
	plans := map[string]ratelimit.Limit{"free": ratelimit.PerMinute(2), "pro": ratelimit.PerMinute(100)}
	planOf := map[string]string{"key-a": "free", "key-b": "pro"} // your accounts
	errUnknownKey := errors.New("unknown API key")

	api, _ := ratelimit.New(rdb, "api", plans["free"])
	rule := ratelimit.Select(func(ctx context.Context, apiKey string) (ratelimit.Rule, error) {
		plan, ok := planOf[apiKey]
		if !ok {
			return nil, errUnknownKey
		}
		return api.WithLimit(plans[plan])
	})
	apiKey := func(r *http.Request) (string, error) {
		if k := r.Header.Get("X-API-Key"); k != "" {
			return k, nil
		}
		return "", httplimit.ErrNoKey
	}
	unauthorized := httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, errUnknownKey) {
			http.Error(w, "unknown API key", http.StatusUnauthorized)
			return
		}
		httplimit.WriteError(w, r, err)
	})
	h := httplimit.Middleware(rule, apiKey, unauthorized)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, key := range []string{"key-a", "key-a", "key-a", "key-b", "key-z"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s %d %s\n", key, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// key-a 200 "api";q=2;w=60
	// key-a 200 "api";q=2;w=60
	// key-a 429 "api";q=2;w=60
	// key-b 200 "api";q=100;w=60
	// key-z 401
}
