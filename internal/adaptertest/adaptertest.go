// Package adaptertest is the suite every HTTP framework adapter of
// httplimit (adapters/ginlimit, adapters/echolimit, adapters/chilimit) passes on a real
// redis-server: route-pattern keys, the header fields and problem bodies of
// httplimit, skipping, refusing, fallbacks, costs and WithCountIf.
// One suite, so the adapters cannot drift apart from httplimit or from
// each other.
package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// An App is a server of the framework under test.
type App struct {
	// New builds the server with Middleware(rule, key, opts...) used the
	// way the framework's users place a limiter for every route (gin's and
	// chi's r.Use, echo's e.Use), and these routes, each answering from
	// its own handler only:
	//
	//	GET  /users/{id}  200 "user"
	//	GET  /items       200 "items"
	//	POST /login       200 "welcome" when the X-Password header is
	//	                  "right", else 401 in the framework's own way
	//	                  (gin: c.AbortWithStatus, echo: return an error)
	//
	// and the framework's 404 for any other path.
	New func(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) http.Handler
	// Users is the framework's pattern for /users/{id} ("/users/:id" in
	// gin and echo), which the limiter's keys must hold.
	Users string
	// PerRoute says New places the middleware in each route's own
	// handlers, where the framework knows the route (Fiber): then a path
	// that matches no route never reaches it.
	PerRoute bool
}

const client = "192.0.2.1:5555"

// Run runs the suite on a redis-server of its own.
func Run(t *testing.T, app App) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	t.Cleanup(func() { rdb.Close() })
	down := downClient(t)
	// A limiter named after the subtest, with a hook that keeps its last
	// decision.
	limiter := func(t *testing.T, rdb ratelimit.Client, limit ratelimit.Limit, opts ...ratelimit.Option) (*ratelimit.Limiter, *ratelimit.Decision) {
		t.Helper()
		last := new(ratelimit.Decision)
		name := strings.ReplaceAll(t.Name()[strings.LastIndex(t.Name(), "/")+1:], " ", "-")
		var mu sync.Mutex // the concurrent subtest decides on many goroutines
		opts = append(opts, ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { mu.Lock(); *last = e.Decision; mu.Unlock() }))
		l, err := ratelimit.New(rdb, name, limit, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return l, last
	}
	byRoute := httplimit.ByRoute(httplimit.ByClientIP())

	// The trap of issue 16: /users/1…5 under a limit of 3 is one route,
	// so the 4th request is denied; /items is a route of its own. The
	// state lives under the route's pattern, and every response carries
	// exactly the fields httplimit writes for the decision.
	t.Run("route key", func(t *testing.T) {
		l, last := limiter(t, rdb, ratelimit.PerMinute(3))
		h := app.New(l, byRoute)
		for i, want := range []int{200, 200, 200, 429, 429} {
			rec := Serve(h, "GET", "/users/"+strconv.Itoa(i+1), client)
			if rec.Code != want {
				t.Fatalf("GET /users/%d: %d, want %d", i+1, rec.Code, want)
			}
			sameHeaders(t, rec, *last)
			if want == 200 {
				body(t, rec, "user")
				continue
			}
			p := problem(t, rec)
			if p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != last.Name {
				t.Errorf("problem %+v", p)
			}
			if ra, _ := strconv.Atoi(rec.Header().Get("Retry-After")); ra < 1 || ra > 20 {
				t.Errorf("Retry-After %q, want 1 to 20 s", rec.Header().Get("Retry-After"))
			}
		}
		key := "route:" + httplimit.JoinKey(app.Users) + ":ip:192.0.2.1"
		if n, err := rdb.Exists(context.Background(), testredis.Key("rl:"+last.Name+":", key)).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s: %d, %v: the state is not under the route's pattern", testredis.Key("rl:"+last.Name+":", key), n, err)
		}
		rec := Serve(h, "GET", "/items", client)
		if rec.Code != 200 || rec.Header().Get("RateLimit") == "" {
			t.Fatalf("GET /items: %d, RateLimit %q: another route has a bucket of its own", rec.Code, rec.Header().Get("RateLimit"))
		}
		body(t, rec, "items")
	})

	// Paths that match no route are one route, never a bucket per path.
	t.Run("no route", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(3))
		h := app.New(l, byRoute)
		want := []int{404, 404, 404, 429}
		if app.PerRoute {
			want[3] = 404
		}
		for i, want := range want {
			if rec := Serve(h, "GET", "/nothing/"+strconv.Itoa(i), client); rec.Code != want {
				t.Fatalf("GET /nothing/%d: %d, want %d", i, rec.Code, want)
			}
		}
		if rec := Serve(h, "GET", "/items", client); rec.Code != 200 {
			t.Fatalf("GET /items after the 404s: %d", rec.Code)
		}
	})

	t.Run("skip", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(1))
		h := app.New(l, byRoute, httplimit.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/items" }))
		for i := 0; i < 3; i++ {
			rec := Serve(h, "GET", "/items", client)
			if rec.Code != 200 || rec.Header().Get("RateLimit-Policy") != "" {
				t.Fatalf("skipped request %d: %d, RateLimit-Policy %q", i, rec.Code, rec.Header().Get("RateLimit-Policy"))
			}
		}
		Serve(h, "GET", "/users/1", client)
		if rec := Serve(h, "GET", "/users/1", client); rec.Code != 429 {
			t.Fatalf("a route that is not skipped: %d, want 429", rec.Code)
		}
	})

	// Select: an allowlisted key is served with no limit fields, an
	// unknown one is refused through the error handler (here a 401 of
	// the caller's; by default a 500 that says nothing of the error).
	t.Run("select", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(1))
		errUnknown := errors.New("unknown API key")
		rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
			switch key {
			case "header:x-api-key:internal":
				return ratelimit.Unlimited, nil
			case "header:x-api-key:free":
				return l, nil
			}
			return nil, errUnknown
		})
		key := httplimit.ByHeader("X-API-Key")
		h := app.New(rule, key, httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errUnknown) {
				http.Error(w, "who are you?", http.StatusUnauthorized)
				return
			}
			httplimit.WriteError(w, r, err)
		}))
		for i := 0; i < 3; i++ {
			rec := Serve(h, "GET", "/items", client, "X-API-Key", "internal")
			if rec.Code != 200 || rec.Header().Get("RateLimit-Policy") != "" {
				t.Fatalf("allowlisted request %d: %d, RateLimit-Policy %q", i, rec.Code, rec.Header().Get("RateLimit-Policy"))
			}
		}
		if rec := Serve(h, "GET", "/items", client, "X-API-Key", "bogus"); rec.Code != 401 {
			t.Fatalf("unknown key: %d, want the error handler's 401", rec.Code)
		}
		if rec := Serve(h, "GET", "/items", client); rec.Code != 400 || problem(t, rec).Status != 400 {
			t.Fatalf("no key: %d, want 400", rec.Code)
		}
		for i, want := range []int{200, 429} {
			if rec := Serve(h, "GET", "/items", client, "X-API-Key", "free"); rec.Code != want {
				t.Fatalf("free request %d: %d, want %d", i, rec.Code, want)
			}
		}
		h = app.New(rule, key)
		if rec := Serve(h, "GET", "/items", client, "X-API-Key", "bogus"); rec.Code != 500 || problem(t, rec).Detail != "" {
			t.Fatalf("unknown key, default error handler: %d %q, want 500 without details", rec.Code, rec.Body.String())
		}
	})

	// Redis unreachable: each fallback decides, and the responses
	// say which.
	t.Run("fallback", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			fallback ratelimit.Fallback
			want     []int
		}{
			{"none", ratelimit.Fallback{}, []int{503}},
			{"open", ratelimit.FailOpen, []int{200, 200, 200}},
			{"closed", ratelimit.FailClosed, []int{503}},
			{"local", ratelimit.FailLocal(1), []int{200, 200, 429}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var opts []ratelimit.Option
				if tc.fallback != (ratelimit.Fallback{}) {
					opts = append(opts, ratelimit.WithFallback(tc.fallback))
				}
				l, last := limiter(t, down, ratelimit.PerMinute(2), opts...)
				h := app.New(l, byRoute)
				for i, want := range tc.want {
					rec := Serve(h, "GET", "/users/1", client)
					if rec.Code != want {
						t.Fatalf("request %d: %d, want %d", i, rec.Code, want)
					}
					if tc.name == "none" {
						if p := problem(t, rec); p.Detail != "" {
							t.Errorf("a 503 of an outage tells %q", p.Detail)
						}
						continue
					}
					if last.Fallback != tc.fallback {
						t.Errorf("decided by %v, want %v", last.Fallback, tc.fallback)
					}
					sameHeaders(t, rec, *last)
					if want != 200 {
						problem(t, rec)
					}
				}
			})
		}
	})

	// A request of cost 2 under a limit of 3: one passes, the second not.
	t.Run("cost", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(3))
		h := app.New(l, byRoute, httplimit.WithCost(func(*http.Request) int64 { return 2 }))
		for i, want := range []int{200, 429} {
			if rec := Serve(h, "GET", "/items", client); rec.Code != want {
				t.Fatalf("request %d: %d, want %d", i, rec.Code, want)
			}
		}
	})

	// Only failed logins count, as the framework's handler answers them,
	// and their response shows the count; once two have failed, even the
	// right password is denied before the handler runs. Good logins never
	// count.
	t.Run("count if", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(2))
		h := app.New(l, byRoute, httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized }))
		for i := 0; i < 5; i++ {
			if rec := Serve(h, "POST", "/login", "192.0.2.9:1", "X-Password", "right"); rec.Code != 200 {
				t.Fatalf("good login %d: %d", i, rec.Code)
			}
		}
		for i, want := range []int{401, 401, 429} {
			rec := Serve(h, "POST", "/login", client, "X-Password", "wrong")
			if rec.Code != want {
				t.Fatalf("bad login %d: %d, want %d", i, rec.Code, want)
			}
			// A counted 401 shows the decision after counting: the second
			// used up the limit.
			if field, wantR := rec.Result().Header.Get("RateLimit"), []string{";r=1;", ";r=0;"}; i < 2 && !strings.Contains(field, wantR[i]) {
				t.Errorf("bad login %d: RateLimit %q, want %s (the count's, not the peek's)", i, field, wantR[i])
			}
		}
		if rec := Serve(h, "POST", "/login", client, "X-Password", "right"); rec.Code != 429 {
			t.Fatalf("good login after two failures: %d, want 429", rec.Code)
		}
	})

	// 64 requests at once on one route and client under a limit of 10:
	// exactly 10 reach the handler, each answered by its own (the
	// frameworks pool their contexts), the others are 429s.
	t.Run("concurrent", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(10))
		h := app.New(l, byRoute)
		var wg sync.WaitGroup
		var ok, denied, other atomic.Int32
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				rec := Serve(h, "GET", "/users/"+strconv.Itoa(i), client)
				switch {
				case rec.Code == 200 && strings.TrimSpace(rec.Body.String()) == "user":
					ok.Add(1)
				case rec.Code == 429 && strings.Contains(rec.Body.String(), "quota-exceeded"):
					denied.Add(1)
				default:
					other.Add(1)
				}
			}(i)
		}
		wg.Wait()
		if ok.Load() != 10 || denied.Load() != 54 || other.Load() != 0 {
			t.Fatalf("%d served, %d denied, %d otherwise; want 10, 54, 0", ok.Load(), denied.Load(), other.Load())
		}
	})

	// A key function that fails with an error of its own: the handler
	// never runs, the error handler answers.
	t.Run("key error", func(t *testing.T) {
		l, _ := limiter(t, rdb, ratelimit.PerMinute(3))
		var calls atomic.Int32
		h := app.New(l, func(*http.Request) (string, error) { calls.Add(1); return "", errors.New("boom") })
		if rec := Serve(h, "GET", "/items", client); rec.Code != 500 || calls.Load() != 1 {
			t.Fatalf("%d after %d key calls, want 500 after 1", rec.Code, calls.Load())
		}
	})
}

// Serve sends one request to h from remoteAddr, with header pairs.
func Serve(h http.Handler, method, path, remoteAddr string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func body(t *testing.T, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if got := strings.TrimSpace(rec.Body.String()); got != want {
		t.Errorf("body %q, want %q: the handler did not run, or ran twice", got, want)
	}
}

// problem decodes an RFC 9457 body whose status is the response's.
func problem(t *testing.T, rec *httptest.ResponseRecorder) httplimit.Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("%d with Content-Type %q, body %q: not httplimit's problem", rec.Code, ct, rec.Body.String())
	}
	var p httplimit.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != rec.Code {
		t.Errorf("problem status %d, response %d", p.Status, rec.Code)
	}
	return p
}

// sameHeaders checks that the response carries exactly the rate-limit
// fields httplimit.SetHeaders writes for d (X-RateLimit-Reset, a Unix
// time, within a second).
func sameHeaders(t *testing.T, rec *httptest.ResponseRecorder, d ratelimit.Decision) {
	t.Helper()
	want := http.Header{}
	httplimit.SetHeaders(want, d)
	for _, f := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After", "X-RateLimit-Reset"} {
		got, w := rec.Header().Get(f), want.Get(f)
		if f == "X-RateLimit-Reset" && got != "" && w != "" {
			g, _ := strconv.ParseInt(got, 10, 64)
			n, _ := strconv.ParseInt(w, 10, 64)
			if g-n <= 1 && n-g <= 1 {
				continue
			}
		}
		if got != w {
			t.Errorf("%s: %q, httplimit writes %q for %v", f, got, w, d)
		}
	}
}

// downClient is a client of a Redis that is not there: a port that was
// free a moment ago, no retries, so every call fails at once.
func downClient(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// Fixed is a rule that decides in memory, allowing every request with
// the same decision, so that a benchmark measures a middleware, not Redis.
var Fixed ratelimit.Rule = fixed{}

type fixed struct{}

var fixedDecision = ratelimit.Decision{Allowed: true, Name: "api", Limit: ratelimit.PerMinute(100), Remaining: 99, ResetAfter: 600 * time.Millisecond}

func (fixed) AllowN(context.Context, string, int64) (ratelimit.Decision, error) {
	return fixedDecision, nil
}

func (fixed) Peek(context.Context, string) (ratelimit.Decision, error) { return fixedDecision, nil }

func (fixed) Allow(context.Context, string) (ratelimit.Decision, error) { return fixedDecision, nil }

// Reserve holds nothing in Redis, so its Settle does nothing.
func (fixed) Reserve(context.Context, string, int64) (*ratelimit.Reservation, error) {
	return &ratelimit.Reservation{Decision: fixedDecision}, nil
}

// Bench serves GET /users/1 through bare (the framework's router alone)
// and limited (the same with the adapter over Fixed, keyed by route and
// client address), so the difference is what the adapter costs a request;
// and, side by side, through the standard mux alone and with
// httplimit.Middleware on the route.
func Bench(b *testing.B, bare, limited http.Handler) {
	user := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("user")) })
	mux, muxLimited := http.NewServeMux(), http.NewServeMux()
	mux.Handle("GET /users/{id}", user)
	muxLimited.Handle("GET /users/{id}", httplimit.Middleware(Fixed, httplimit.ByRoute(httplimit.ByClientIP()))(user))
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"limited", limited}, {"mux", mux}, {"mux-httplimit", muxLimited}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/users/1", nil)
			r.RemoteAddr = client
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, r)
				if rec.Code != 200 {
					b.Fatalf("%d %q", rec.Code, rec.Body.String())
				}
			}
		})
	}
}
