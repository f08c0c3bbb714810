package chilimit_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/adapters/chilimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var testT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(s)) }
}

func login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Password") != "right" {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	w.Write([]byte("welcome"))
}

// The adapters' suite with the limiter in r.Use, where issue 16 found
// httplimit.ByRoute keying by URL path.
func TestSuite(t *testing.T) {
	adaptertest.Run(t, adaptertest.App{
		Users: "/users/{id}",
		New: func(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) http.Handler {
			r := chi.NewRouter()
			r.Use(chilimit.Middleware(rule, key, opts...))
			r.Get("/users/{id}", text("user"))
			r.Get("/items", text("items"))
			r.Post("/login", login)
			return r
		},
	})
}

// Where the pattern is known, with the adapter and with httplimit alone:
// every placement either keys by the whole route pattern or fails loudly,
// except httplimit alone in a subrouter's Use, which sees only the mount's
// pattern (the reason for the adapter, as its package doc says).
func TestPlacements(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	byRoute := httplimit.ByRoute(httplimit.ByClientIP())
	for _, tc := range []struct {
		name  string
		build func(mw func(http.Handler) http.Handler) http.Handler
		adapt bool
		users string // the pattern the state must be under; "" for a 500
		items int    // what /api/items gets after /api/users/1…4
	}{
		{"adapter in a subrouter's Use", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Route("/api", func(r chi.Router) {
				r.Use(mw)
				r.Get("/users/{id}", text("user"))
				r.Get("/items", text("items"))
			})
			return r
		}, true, "/api/users/{id}", 200},
		{"adapter in r.With", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.With(mw).Get("/api/users/{id}", text("user"))
			r.Get("/api/items", text("items"))
			return r
		}, true, "/api/users/{id}", 200},
		{"httplimit in r.With", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.With(mw).Get("/api/users/{id}", text("user"))
			r.With(mw).Get("/api/items", text("items"))
			return r
		}, false, "/api/users/{id}", 200},
		{"httplimit in a group's Use", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Group(func(r chi.Router) {
				r.Use(mw)
				r.Get("/api/users/{id}", text("user"))
				r.Get("/api/items", text("items"))
			})
			return r
		}, false, "/api/users/{id}", 200},
		{"httplimit in r.Use", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(mw)
			r.Get("/api/users/{id}", text("user"))
			r.Get("/api/items", text("items"))
			return r
		}, false, "", 500},
		{"httplimit in a subrouter's Use", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Route("/api", func(r chi.Router) {
				r.Use(mw)
				r.Get("/users/{id}", text("user"))
				r.Get("/items", text("items"))
			})
			return r
		}, false, "/api/*", 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ratelimit.New(rdb, "placement", ratelimit.PerMinute(3), ratelimit.WithPrefix("rl:"+strings.ReplaceAll(tc.name, " ", "_")+":"))
			if err != nil {
				t.Fatal(err)
			}
			mw := httplimit.Middleware(l, byRoute)
			if tc.adapt {
				mw = chilimit.Middleware(l, byRoute)
			}
			h := tc.build(mw)
			want := []int{200, 200, 200, 429}
			if tc.users == "" {
				want = []int{500}
			}
			for i, code := range want {
				rec := adaptertest.Serve(h, "GET", "/api/users/"+strconv.Itoa(i+1), "192.0.2.1:1")
				if rec.Code != code {
					t.Fatalf("GET /api/users/%d: %d %q, want %d", i+1, rec.Code, rec.Body.String(), code)
				}
				if code == 500 && !strings.Contains(rec.Body.String(), "no route pattern") {
					t.Fatalf("the 500 does not say why: %q", rec.Body.String())
				}
			}
			if rec := adaptertest.Serve(h, "GET", "/api/items", "192.0.2.1:1"); rec.Code != tc.items {
				t.Fatalf("GET /api/items: %d, want %d", rec.Code, tc.items)
			}
			if tc.users == "" {
				return
			}
			key := testredis.Key("rl:"+strings.ReplaceAll(tc.name, " ", "_")+":", "route:"+httplimit.JoinKey(tc.users)+":ip:192.0.2.1")
			if n, err := rdb.Exists(context.Background(), key).Result(); err != nil || n != 1 {
				t.Errorf("EXISTS %s: %d, %v", key, n, err)
			}
		})
	}
}
