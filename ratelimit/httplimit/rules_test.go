package httplimit_test

// The traps, each through the middleware: a route that falls back
// to the URL path, a rule that cannot skip, a tier that cannot refuse, a
// bad limit that becomes a 503 per request; and brute-force protection.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// codes serves each path and returns the status codes.
func codes(h http.Handler, paths ...string) []int {
	var got []int
	for _, p := range paths {
		r := httptest.NewRequest("GET", p, nil)
		got = append(got, serve(h, r).Code)
	}
	return got
}

// ByRoute under a middleware that wraps the whole mux (chi's r.Use, gin's
// engine.Use) sees no pattern. It used to key by the URL path, so
// /users/1…5 got five buckets and all passed a limit of 3; now every such
// request is a 500 that says how to fix it.
func TestByRouteNeverFallsBackToThePath(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.Per(3, time.Hour))
	mw := httplimit.Middleware(l, httplimit.ByRoute(httplimit.ByClientIP()))
	mux := http.NewServeMux()
	mux.Handle("GET /users/{id}", okHandler)
	outside := mw(mux)
	users := []string{"/users/1", "/users/2", "/users/3", "/users/4", "/users/5"}
	if got := codes(outside, users...); !cmp.Equal(got, []int{500, 500, 500, 500, 500}) {
		t.Errorf("ByRoute around the mux: %v, want a 500 each", got)
	}
	rec := serve(outside, httptest.NewRequest("GET", "/users/1", nil))
	if p := problemOf(t, rec); !strings.Contains(p.Detail, "no route pattern") || !strings.Contains(p.Detail, "SetRoute") {
		t.Errorf("the 500 does not say why: %+v", p)
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}

	// Inside the route, the pattern is the key: one bucket for /users/{id}.
	inside := http.NewServeMux()
	inside.Handle("GET /users/{id}", mw(okHandler))
	if got := codes(inside, users...); !cmp.Equal(got, []int{200, 200, 200, 429, 429}) {
		t.Errorf("ByRoute inside the route: %v", got)
	}
	// A framework adapter names the pattern with SetRoute.
	adapter := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw(okHandler).ServeHTTP(w, httplimit.SetRoute(r, "/teams/:id"))
	})
	if got := codes(adapter, "/teams/1", "/teams/2", "/teams/3", "/teams/4"); !cmp.Equal(got, []int{200, 200, 200, 429}) {
		t.Errorf("ByRoute with SetRoute: %v", got)
	}
}

// A rule can skip: an allowlisted request is served, with no rate-limit
// field and nothing written to Redis. (A rule returning no limiter used to
// answer 503.)
func TestSkip(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.Per(1, time.Hour))
	allowlist := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
		if key == "ip:10.0.0.1" {
			return ratelimit.Unlimited, nil
		}
		return l, nil
	})
	health := httplimit.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" })
	h := httplimit.Middleware(allowlist, httplimit.ByClientIP(), health)(okHandler)
	for i := 0; i < 3; i++ {
		for _, r := range []*http.Request{get("10.0.0.1:1"), httptest.NewRequest("GET", "/healthz", nil)} {
			rec := serve(h, r)
			if rec.Code != 200 || rec.Body.String() != "ok" {
				t.Fatalf("%s %s: %d", r.RemoteAddr, r.URL.Path, rec.Code)
			}
			for name := range rec.Header() {
				if strings.Contains(strings.ToLower(name), "ratelimit") || name == "Retry-After" {
					t.Errorf("%s %s: field %s", r.RemoteAddr, r.URL.Path, name)
				}
			}
		}
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("skipped requests wrote %v", keys)
	}
	if got := codes(h, "/", "/"); !cmp.Equal(got, []int{200, 429}) {
		t.Errorf("everyone else: %v, want the limit", got)
	}
	// Returning no rule at all is a mistake, said loudly, not a skip.
	none := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return nil, nil })
	var missing *ratelimit.Limiter // a map lookup that missed
	nilLimiter := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return missing, nil })
	for name, rule := range map[string]ratelimit.Rule{"nil": none, "nil *Limiter": nilLimiter} {
		rec := serve(httplimit.Middleware(rule, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
		if rec.Code != 500 || !strings.Contains(problemOf(t, rec).Detail, "invalid") {
			t.Errorf("Select returning a %s rule: %d %s", name, rec.Code, rec.Body)
		}
	}
}

// A tier function can refuse: an unknown API key goes to the error handler
// with the function's own error; no bucket is made for it, and no fallback
//
//	turns it into an allow, Redis up or down. (Tiers used to give it
//
// the Default tier and a fresh bucket per bogus key.)
func TestRefuse(t *testing.T) {
	errUnknown := errors.New("unknown API key")
	for _, down := range []bool{false, true} {
		f := newFrozen(t)
		rdb := f.rdb
		if down {
			rdb = downClient(t)
		}
		free, _ := ratelimit.New(rdb, "free", ratelimit.Per(5, time.Hour), ratelimit.WithFallback(ratelimit.FailOpen))
		rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
			if key != "header:x-api-key:good" {
				return nil, fmt.Errorf("%w: %s", errUnknown, key)
			}
			return free, nil
		})
		var got []error
		h := httplimit.Middleware(rule, httplimit.ByHeader("X-API-Key"), httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			got = append(got, err)
			w.WriteHeader(401)
		}))(okHandler)
		for i := 0; i < 20; i++ {
			if rec := serve(h, get("192.0.2.1:1", "X-API-Key", fmt.Sprint("bogus", i))); rec.Code != 401 {
				t.Errorf("down %v, bogus key %d: %d, want 401", down, i, rec.Code)
			}
		}
		if len(got) != 20 || !errors.Is(got[0], errUnknown) || errors.Is(got[0], ratelimit.ErrUnavailable) {
			t.Errorf("down %v: the error handler saw %v", down, got)
		}
		if rec := serve(h, get("192.0.2.1:1", "X-API-Key", "good")); rec.Code != 200 {
			t.Errorf("down %v, a good key: %d", down, rec.Code)
		}
		if keys := f.Keys(); len(keys) > 1 {
			t.Errorf("bogus keys made buckets: %v", keys)
		}
	}
}

// A bad limit is refused where it is built: by New and WithLimit, with
// ErrInvalid; one chosen per call is a 500 that names it, never a 503 as
// if Redis were down.
func TestBadLimit(t *testing.T) {
	f := newFrozen(t)
	api, _ := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(10), ratelimit.WithAlgorithm(ratelimit.FixedWindow), ratelimit.WithFallback(ratelimit.FailOpen))
	bad := ratelimit.PerMinute(10).WithBurst(20) // a burst means nothing to a window
	if _, err := ratelimit.New(f.rdb, "api", bad, ratelimit.WithAlgorithm(ratelimit.FixedWindow)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("New: %v", err)
	}
	if _, err := api.WithLimit(bad); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("WithLimit: %v", err)
	}
	perCall := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return api.WithLimit(bad) })
	rec := serve(httplimit.Middleware(perCall, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 500 || !strings.Contains(p.Detail, "Burst must equal Rate") {
		t.Errorf("a bad limit per call: %d %+v, want 500 naming it", rec.Code, p)
	}
}

// Brute-force protection: only failed logins count (WithCountIf), and once
// the limit is used up the key is locked out for an hour (WithLockout),
// however the limit refills meanwhile. A locked-out request never reaches
// the handler.
func TestBruteForce(t *testing.T) {
	f := newFrozen(t)
	// A lockout's sliding log reserves on this process's clock: the
	// server's.
	guard, err := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(3), ratelimit.WithLockout(time.Hour),
		ratelimit.WithClock(func() time.Time { return f.Now }))
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		if r.Header.Get("X-Password") != "right" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	h := httplimit.Middleware(guard, httplimit.ByClientIP(),
		httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized }))(login)
	try := func(password string) int { return serve(h, get("192.0.2.1:1", "X-Password", password)).Code }

	for i := 0; i < 10; i++ { // successes count nothing
		if code := try("right"); code != 200 {
			t.Fatalf("success %d: %d", i, code)
		}
	}
	var got []int
	var fields []string
	for i := 0; i < 5; i++ {
		rec := serve(h, get("192.0.2.1:1", "X-Password", "wrong"))
		got = append(got, rec.Code)
		fields = append(fields, rec.Result().Header.Get("RateLimit")) // as sent
	}
	if want := []int{401, 401, 401, 429, 429}; !cmp.Equal(got, want) {
		t.Errorf("failed logins: %v, want %v", got, want)
	}
	// A counted response shows the decision after counting: the third
	// failure used up the limit and started the lockout (they used to show
	// the peek before it, one behind: r=1).
	for i, want := range []string{`"login";r=2;t=60`, `"login";r=1;t=60`, `"login";r=0;t=3600`} {
		sameSF(t, fmt.Sprintf("failure %d's RateLimit", i+1), fields[i], want)
	}
	if ran != 13 {
		t.Errorf("the handler ran %d times, want 13 (not for a locked-out request)", ran)
	}
	// A minute refills the limit, but the lockout holds, for the right
	// password too.
	f.advance(time.Minute)
	rec := serve(h, get("192.0.2.1:1", "X-Password", "right"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "3540" {
		t.Errorf("locked out after a minute: %d, Retry-After %q, want 429 and 3540", rec.Code, rec.Header().Get("Retry-After"))
	}
	f.advance(59 * time.Minute)
	if code := try("right"); code != 200 {
		t.Errorf("after the lockout: %d", code)
	}
	// Reset lifts a lockout (an admin, or a successful second factor).
	for i := 0; i < 3; i++ {
		try("wrong")
	}
	if code := try("right"); code != 429 {
		t.Fatalf("locked out again: %d", code)
	}
	if err := guard.Reset(ctx, "ip:192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if code := try("right"); code != 200 {
		t.Errorf("after Reset: %d", code)
	}
}

// The brute-force recipe (docs/recipes.md) against a patient guesser who
// paces at exactly the rate, one guess every 3 minutes under 5 per 15
// minutes: the fifth failure in any 15 minutes locks the address out for
// the day. GCRA, the default before a lockout chose the sliding log, never
// saw its limit used up at that pace: 12 guesses of 12 got through.
func TestBruteForcePaced(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   []ratelimit.Option
		passed int // guesses the handler answered, of 12
	}{
		{"the recipe", nil, 5},
		{"GCRA", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.GCRA)}, 12},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFrozen(t)
			clock := ratelimit.WithClock(func() time.Time { return f.Now }) // the server's
			guard, err := ratelimit.New(f.rdb, "login", ratelimit.Per(5, 15*time.Minute), append(tt.opts, ratelimit.WithLockout(24*time.Hour), clock)...)
			if err != nil {
				t.Fatal(err)
			}
			failed := httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized })
			h := httplimit.Middleware(guard, httplimit.ByClientIP(), failed)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized) // every guess is wrong
			}))
			var codes []int
			passed := 0
			for i := 0; i < 12; i++ {
				code := serve(h, get("192.0.2.1:1")).Code
				codes = append(codes, code)
				if code == http.StatusUnauthorized {
					passed++
				}
				f.advance(3 * time.Minute)
			}
			if passed != tt.passed {
				t.Errorf("%d of 12 paced guesses reached the handler, want %d: %v", passed, tt.passed, codes)
			}
		})
	}
}
