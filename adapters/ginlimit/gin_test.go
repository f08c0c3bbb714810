package ginlimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/adapters/ginlimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

func init() { gin.SetMode(gin.ReleaseMode) }

var testT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The adapters' suite with the limiter in r.Use, where issue 16 found
// httplimit.ByRoute keying by URL path.
func TestSuite(t *testing.T) {
	adaptertest.Run(t, adaptertest.App{
		Users: "/users/:id",
		New: func(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) http.Handler {
			r := gin.New()
			r.Use(ginlimit.Middleware(rule, key, opts...))
			r.GET("/users/:id", func(c *gin.Context) { c.String(200, "user") })
			r.GET("/items", func(c *gin.Context) { c.String(200, "items") })
			r.POST("/login", func(c *gin.Context) {
				if c.GetHeader("X-Password") != "right" {
					c.AbortWithStatus(http.StatusUnauthorized)
					return
				}
				c.String(200, "welcome")
			})
			return r
		},
	})
}

// Key reaches what an earlier gin middleware stored on the context, and
// composes with httplimit.ByRoute; a limiter in one route's handlers
// limits that route alone.
func TestKeyAndPerRoute(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	l, err := ratelimit.New(rdb, "users", ratelimit.PerMinute(2))
	if err != nil {
		t.Fatal(err)
	}
	byUser := ginlimit.Key(func(c *gin.Context) (string, error) {
		u := c.GetString("user")
		if u == "" {
			return "", httplimit.ErrNoKey
		}
		return "user:" + u, nil
	})
	r := gin.New()
	r.Use(func(c *gin.Context) { c.Set("user", c.GetHeader("X-User")) })
	r.GET("/users/:id", ginlimit.Middleware(l, httplimit.ByRoute(byUser)), func(c *gin.Context) { c.String(200, "user") })
	r.GET("/items", func(c *gin.Context) { c.String(200, "items") })
	for i, want := range []int{200, 200, 429} {
		if rec := adaptertest.Serve(r, "GET", "/users/"+string(rune('1'+i)), "192.0.2.1:1", "X-User", "ann"); rec.Code != want {
			t.Fatalf("ann's request %d: %d, want %d", i, rec.Code, want)
		}
	}
	if rec := adaptertest.Serve(r, "GET", "/users/1", "192.0.2.1:1", "X-User", "bob"); rec.Code != 200 {
		t.Fatalf("bob, from the same address: %d, want 200", rec.Code)
	}
	if rec := adaptertest.Serve(r, "GET", "/users/1", "192.0.2.1:1"); rec.Code != 400 {
		t.Fatalf("no user: %d, want 400", rec.Code)
	}
	for i := 0; i < 4; i++ {
		if rec := adaptertest.Serve(r, "GET", "/items", "192.0.2.1:1", "X-User", "ann"); rec.Code != 200 || rec.Header().Get("RateLimit") != "" {
			t.Fatalf("a route without the limiter: %d, RateLimit %q", rec.Code, rec.Header().Get("RateLimit"))
		}
	}
	// Key outside the middleware says so.
	if _, err := byUser(httptest.NewRequest("GET", "/items", nil)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Fatalf("Key outside Middleware: %v, want ErrInvalid", err)
	}
}
