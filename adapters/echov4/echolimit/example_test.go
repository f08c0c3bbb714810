// Code generated from adapters/echolimit/example_test.go by adapters/echov4/echolimit/internal/samesource (go test -update). DO NOT EDIT.

package echolimit_test

import (
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/adapters/echov4/echolimit"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// Three requests a minute per client address and route: /users/1 to
// /users/4 are one route, /users/:id, so the fourth is denied.
func Example() {
	rdb := exampleRedis() // redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(3))
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.Use(echolimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
	e.GET("/users/:id", func(c echo.Context) error { return c.String(200, "user "+c.Param("id")) })

	for _, path := range []string{"/users/1", "/users/2", "/users/3", "/users/4"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// /users/1 200 "api";r=2;t=20
	// /users/2 200 "api";r=1;t=40
	// /users/3 200 "api";r=0;t=60
	// /users/4 429 "api";r=0;t=20
}

// exampleRedis is a miniredis whose clock stands still, so that the
// example prints exact waits.
func exampleRedis() *redis.Client {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(testT0)
	return redis.NewClient(&redis.Options{Addr: m.Addr()})
}
