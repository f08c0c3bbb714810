package fiberlimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/adapters/fiberlimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var testT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func routes(app *fiber.App, mw ...any) {
	with := func(h fiber.Handler) (any, []any) {
		if len(mw) == 0 {
			return h, nil
		}
		return mw[0], []any{h}
	}
	h, more := with(func(c fiber.Ctx) error { return c.SendString("user") })
	app.Get("/users/:id", h, more...)
	h, more = with(func(c fiber.Ctx) error { return c.SendString("items") })
	app.Get("/items", h, more...)
	h, more = with(func(c fiber.Ctx) error {
		if c.Get("X-Password") != "right" {
			return fiber.ErrUnauthorized
		}
		return c.SendString("welcome")
	})
	app.Post("/login", h, more...)
}

// The adapters' suite with the limiter in each route's handlers, where
// Fiber knows the route.
func TestSuite(t *testing.T) {
	adaptertest.Run(t, adaptertest.App{
		Users:    "/users/:id",
		PerRoute: true,
		New: func(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) http.Handler {
			app := fiber.New()
			routes(app, fiberlimit.Middleware(rule, key, opts...))
			return adaptor.FiberApp(app)
		},
	})
}

// Under app.Use Fiber has not chosen the route: ByRoute refuses loudly,
// other keys limit every request, 404s included. Key reaches c.Locals.
func TestUseAndKey(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	l, err := ratelimit.New(rdb, "use", ratelimit.PerMinute(2))
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use(fiberlimit.Middleware(l, httplimit.ByRoute(httplimit.ByClientIP())))
	routes(app)
	rec := adaptertest.Serve(adaptor.FiberApp(app), "GET", "/users/1", "192.0.2.1:1")
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "no route pattern") {
		t.Fatalf("ByRoute under app.Use: %d %q, want a 500 that says there is no route", rec.Code, rec.Body.String())
	}

	// A group's middleware is a Use too; a route of a group has its whole
	// pattern.
	app = fiber.New()
	app.Group("/api", fiberlimit.Middleware(l, httplimit.ByRoute(httplimit.ByClientIP()))).Get("/items", func(c fiber.Ctx) error { return c.SendString("items") })
	if rec := adaptertest.Serve(adaptor.FiberApp(app), "GET", "/api/items", "192.0.2.1:1"); rec.Code != 500 {
		t.Fatalf("ByRoute in a group's middleware: %d, want 500", rec.Code)
	}
	grouped, err := ratelimit.New(rdb, "grouped", ratelimit.PerMinute(2))
	if err != nil {
		t.Fatal(err)
	}
	app = fiber.New()
	app.Group("/api").Get("/users/:id", fiberlimit.Middleware(grouped, httplimit.ByRoute(httplimit.ByClientIP())), func(c fiber.Ctx) error { return c.SendString("user") })
	for i, want := range []int{200, 200, 429} {
		if rec := adaptertest.Serve(adaptor.FiberApp(app), "GET", "/api/users/"+strconv.Itoa(i), "192.0.2.1:1"); rec.Code != want {
			t.Fatalf("a group's route, request %d: %d, want %d", i, rec.Code, want)
		}
	}
	if n, err := rdb.Exists(context.Background(), testredis.Key("rl:grouped:", "route:"+httplimit.JoinKey("/api/users/:id")+":ip:192.0.2.1")).Result(); err != nil || n != 1 {
		t.Fatalf("the state is not under /api/users/:id: %d, %v", n, err)
	}

	app = fiber.New()
	app.Use(fiberlimit.Middleware(l, httplimit.ByClientIP()))
	routes(app)
	for i, want := range []int{200, 404, 429} {
		path := []string{"/items", "/nothing", "/items"}[i]
		if rec := adaptertest.Serve(adaptor.FiberApp(app), "GET", path, "192.0.2.2:1"); rec.Code != want {
			t.Fatalf("app.Use, GET %s: %d, want %d", path, rec.Code, want)
		}
	}

	byUser := fiberlimit.Key(func(c fiber.Ctx) (string, error) {
		u, _ := c.Locals("user").(string)
		if u == "" {
			return "", httplimit.ErrNoKey
		}
		return "user:" + u, nil
	})
	app = fiber.New()
	app.Use(func(c fiber.Ctx) error { c.Locals("user", c.Get("X-User")); return c.Next() })
	app.Get("/users/:id", fiberlimit.Middleware(l, httplimit.ByRoute(byUser)), func(c fiber.Ctx) error { return c.SendString("user") })
	h := adaptor.FiberApp(app)
	for i, want := range []int{200, 200, 429} {
		if rec := adaptertest.Serve(h, "GET", "/users/"+strconv.Itoa(i), "192.0.2.3:1", "X-User", "ann"); rec.Code != want {
			t.Fatalf("ann's request %d: %d, want %d", i, rec.Code, want)
		}
	}
	if rec := adaptertest.Serve(h, "GET", "/users/1", "192.0.2.3:1", "X-User", "bob"); rec.Code != 200 {
		t.Fatalf("bob: %d, want 200", rec.Code)
	}
	if _, err := byUser(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Fatalf("Key outside Middleware: %v, want ErrInvalid", err)
	}
}
