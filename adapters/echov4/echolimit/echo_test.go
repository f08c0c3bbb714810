// Code generated from adapters/echolimit/echo_test.go by adapters/echov4/echolimit/internal/samesource (go test -update). DO NOT EDIT.

package echolimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/adapters/echov4/echolimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var testT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func routes(e *echo.Echo) {
	e.GET("/users/:id", func(c echo.Context) error { return c.String(200, "user") })
	e.GET("/items", func(c echo.Context) error { return c.String(200, "items") })
	e.POST("/login", func(c echo.Context) error {
		if c.Request().Header.Get("X-Password") != "right" {
			return echo.ErrUnauthorized
		}
		return c.String(200, "welcome")
	})
}

// The adapters' suite with the limiter in e.Use.
func TestSuite(t *testing.T) {
	adaptertest.Run(t, adaptertest.App{
		Users: "/users/:id",
		New: func(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) http.Handler {
			e := echo.New()
			e.Use(echolimit.Middleware(rule, key, opts...))
			routes(e)
			return e
		},
	})
}

// Key reaches what an earlier Echo middleware stored on the context, and
// composes with httplimit.ByRoute; a limiter on one route limits that
// route alone; under e.Pre, before Echo routes, ByRoute still keys by the
// route.
func TestKeyPerRouteAndPre(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	l, err := ratelimit.New(rdb, "users", ratelimit.PerMinute(2))
	if err != nil {
		t.Fatal(err)
	}
	byUser := echolimit.Key(func(c echo.Context) (string, error) {
		u, _ := c.Get("user").(string)
		if u == "" {
			return "", httplimit.ErrNoKey
		}
		return "user:" + u, nil
	})
	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { c.Set("user", c.Request().Header.Get("X-User")); return next(c) }
	})
	e.GET("/users/:id", func(c echo.Context) error { return c.String(200, "user") }, echolimit.Middleware(l, httplimit.ByRoute(byUser)))
	e.GET("/items", func(c echo.Context) error { return c.String(200, "items") })
	for i, want := range []int{200, 200, 429} {
		if rec := adaptertest.Serve(e, "GET", "/users/"+strconv.Itoa(i), "192.0.2.1:1", "X-User", "ann"); rec.Code != want {
			t.Fatalf("ann's request %d: %d, want %d", i, rec.Code, want)
		}
	}
	if rec := adaptertest.Serve(e, "GET", "/users/1", "192.0.2.1:1", "X-User", "bob"); rec.Code != 200 {
		t.Fatalf("bob, from the same address: %d, want 200", rec.Code)
	}
	if rec := adaptertest.Serve(e, "GET", "/users/1", "192.0.2.1:1"); rec.Code != 400 {
		t.Fatalf("no user: %d, want 400", rec.Code)
	}
	for i := 0; i < 4; i++ {
		if rec := adaptertest.Serve(e, "GET", "/items", "192.0.2.1:1", "X-User", "ann"); rec.Code != 200 || rec.Header().Get("RateLimit") != "" {
			t.Fatalf("a route without the limiter: %d, RateLimit %q", rec.Code, rec.Header().Get("RateLimit"))
		}
	}
	if _, err := byUser(httptest.NewRequest("GET", "/items", nil)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Fatalf("Key outside Middleware: %v, want ErrInvalid", err)
	}

	// Under e.Pre Echo has not routed yet: the adapter asks its router.
	pre := echo.New()
	pre.Pre(echolimit.Middleware(l, httplimit.ByRoute(httplimit.ByClientIP())))
	routes(pre)
	for i, want := range []int{200, 200, 429} {
		if rec := adaptertest.Serve(pre, "GET", "/users/"+strconv.Itoa(i), "192.0.2.5:1"); rec.Code != want {
			t.Fatalf("ByRoute under e.Pre, request %d: %d, want %d", i, rec.Code, want)
		}
	}
	key := testredis.Key("rl:users:", "route:"+httplimit.JoinKey("/users/:id")+":ip:192.0.2.5")
	if n, err := rdb.Exists(context.Background(), key).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS %s: %d, %v", key, n, err)
	}
	// Without ByRoute, e.Pre is a fine place: it limits 404s too.
	pre = echo.New()
	pre.Pre(echolimit.Middleware(l, httplimit.ByClientIP()))
	routes(pre)
	for i, want := range []int{404, 404, 429} {
		if rec := adaptertest.Serve(pre, "GET", "/nothing", "192.0.2.7:1"); rec.Code != want {
			t.Fatalf("e.Pre, request %d: %d, want %d", i, rec.Code, want)
		}
	}
}
