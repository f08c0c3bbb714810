package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/clientip"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func get(remoteAddr string, header ...string) *http.Request {
	r := httptest.NewRequest("GET", "/items", nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) httplimit.Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q", ct)
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

// Every algorithm behind the middleware: status codes and every header,
// request by request, held to the decision the limiter made; and a client
// that waits exactly its Retry-After gets through.
func TestMiddlewareEveryAlgorithm(t *testing.T) {
	for alg := ratelimit.GCRA; alg <= ratelimit.SlidingWindowCounter; alg++ {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			f.advance(250 * time.Millisecond) // off the window grid
			var last ratelimit.Decision
			l, err := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(3), ratelimit.WithAlgorithm(alg),
				ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { last = e.Decision }))
			if err != nil {
				t.Fatal(err)
			}
			h := httplimit.Middleware(l, httplimit.ByClientIP())(okHandler)
			for i, want := range []int{200, 200, 200, 429, 429} {
				before := time.Now()
				rec := serve(h, get("192.0.2.1:5555"))
				after := time.Now()
				if rec.Code != want {
					t.Fatalf("request %d: %d, want %d", i, rec.Code, want)
				}
				checkHeaders(t, rec, last, before, after)
				sameSF(t, "RateLimit-Policy", rec.Header().Get("RateLimit-Policy"), `"api";q=3;w=60`)
				if want == 200 {
					if rec.Body.String() != "ok" {
						t.Errorf("body %q", rec.Body.String())
					}
					continue
				}
				p := problemOf(t, rec)
				if p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || !cmp.Equal(p.ViolatedPolicies, []string{"api"}) {
					t.Errorf("problem %+v", p)
				}
			}
			// Waiting exactly Retry-After is enough, every time.
			for i := 0; i < 3; i++ {
				rec := serve(h, get("192.0.2.1:5555"))
				if rec.Code == 200 {
					continue
				}
				secs, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
				f.advance(time.Duration(secs) * time.Second)
				if rec := serve(h, get("192.0.2.1:5555")); rec.Code != 200 {
					t.Fatalf("after waiting Retry-After %d s: %d", secs, rec.Code)
				}
			}
		})
	}
}

// checkHeaders holds a response's rate-limit fields to the decision.
func checkHeaders(t *testing.T, rec *httptest.ResponseRecorder, d ratelimit.Decision, before, after time.Time) {
	t.Helper()
	h := rec.Header()
	items, err := parseSFList(h.Get("RateLimit"))
	if err != nil || len(items) != 1 {
		t.Fatalf("RateLimit %q: %v", h.Get("RateLimit"), err)
	}
	wantT := d.ResetAfter
	if !d.Allowed {
		wantT = d.RetryAfter
	}
	if got := items[0].Params; got["r"] != d.Remaining || time.Duration(got["t"])*time.Second < wantT || time.Duration(got["t"]-1)*time.Second >= wantT {
		t.Errorf("RateLimit %q for %v", h.Get("RateLimit"), d)
	}
	if h.Get("X-RateLimit-Limit") != strconv.FormatInt(d.Limit.Burst, 10) || h.Get("X-RateLimit-Remaining") != strconv.FormatInt(d.Remaining, 10) {
		t.Errorf("X-RateLimit-Limit %q, -Remaining %q for %v", h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), d)
	}
	checkReset(t, h, d, before, after)
	retry := h.Get("Retry-After")
	if d.Allowed {
		if retry != "" {
			t.Errorf("Retry-After %q on an allowed request", retry)
		}
		return
	}
	secs, err := strconv.ParseInt(retry, 10, 64)
	// Whole seconds, rounded up: never earlier than the real wait, and
	// less than a second later.
	if w := time.Duration(secs) * time.Second; err != nil || w < d.RetryAfter || w-time.Second >= d.RetryAfter {
		t.Errorf("Retry-After %q for a wait of %v", retry, d.RetryAfter)
	}
}

func TestMiddlewareNever(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.PerSecond(5))
	h := httplimit.Middleware(l, httplimit.ByClientIP(), httplimit.WithCost(func(*http.Request) int64 { return 6 }))(okHandler)
	rec := serve(h, get("192.0.2.1:1"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "" {
		t.Errorf("a cost above the burst: %d, Retry-After %q; want 429 without Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	// r=0 and no t: nothing left for it and no time at which more will
	// be (t=0 told a client to retry at once); the problem says why.
	sameSF(t, "RateLimit", rec.Header().Get("RateLimit"), `"api";r=0`)
	if p := problemOf(t, rec); p.Status != 429 || !strings.Contains(p.Detail, "can never pass") {
		t.Errorf("problem %+v, want a 429 that says the request can never pass", p)
	}
	// Beside a limit that can pass later: that one keeps its t, and
	// Retry-After stays out (waiting cannot help).
	hourly, _ := ratelimit.New(f.rdb, "hourly", ratelimit.Per(100, time.Hour))
	both := httplimit.Middleware(mustAll(t, l, hourly), httplimit.ByClientIP(), httplimit.WithCost(func(*http.Request) int64 { return 6 }))(okHandler)
	rec = serve(both, get("192.0.2.2:1"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "" {
		t.Errorf("with a second limit: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	sameSF(t, "RateLimit", rec.Header().Get("RateLimit"), `"api";r=0, "hourly";r=94;t=216`)
	h = httplimit.Middleware(l, httplimit.ByClientIP(), httplimit.WithCost(func(*http.Request) int64 { return 0 }))(okHandler)
	if rec := serve(h, get("192.0.2.1:1")); rec.Code != 500 {
		t.Errorf("a cost of 0: %d, want the error handler's 500 (ErrInvalid)", rec.Code)
	}
}

// Several limits: one item each in RateLimit, the strictest in the X-
// fields, the longest wait in Retry-After, every denier in the problem.
func TestMiddlewareSeveralLimits(t *testing.T) {
	f := newFrozen(t)
	burst, _ := ratelimit.New(f.rdb, "burst", ratelimit.PerSecond(2))
	hourly, _ := ratelimit.New(f.rdb, "hourly", ratelimit.Per(3, time.Hour), ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))
	h := httplimit.Middleware(mustAll(t, burst, hourly), httplimit.ByClientIP())(okHandler)
	var codes []int
	var rec *httptest.ResponseRecorder
	for i := 0; i < 3; i++ {
		rec = serve(h, get("192.0.2.1:1"))
		codes = append(codes, rec.Code)
	}
	if !cmp.Equal(codes, []int{200, 200, 429}) {
		t.Fatalf("codes %v", codes)
	}
	sameSF(t, "RateLimit-Policy", rec.Header().Get("RateLimit-Policy"), `"burst";q=2;w=1, "hourly";q=3;w=3600`)
	sameSF(t, "RateLimit", rec.Header().Get("RateLimit"), `"burst";r=0;t=1, "hourly";r=0;t=3600`)
	if p := problemOf(t, rec); !cmp.Equal(p.ViolatedPolicies, []string{"burst"}) {
		t.Errorf("violated %v", p.ViolatedPolicies)
	}
	f.advance(time.Second)
	rec = serve(h, get("192.0.2.1:1"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "3599" || rec.Header().Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("the hourly limit: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if p := problemOf(t, rec); !cmp.Equal(p.ViolatedPolicies, []string{"hourly"}) {
		t.Errorf("violated %v", p.ViolatedPolicies)
	}
}

func TestMiddlewareFailurePolicies(t *testing.T) {
	rdb := downClient(t)
	open := newNamed(t, rdb, "open", ratelimit.WithFallback(ratelimit.FailOpen))
	closed := newNamed(t, rdb, "closed", ratelimit.WithFallback(ratelimit.FailClosed))
	none := newNamed(t, rdb, "none")

	rec := serve(httplimit.Middleware(open, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	if rec.Code != 200 || rec.Header().Get("RateLimit") != "" || rec.Header().Get("X-RateLimit-Remaining") != "" {
		t.Errorf("fail open: %d %v", rec.Code, rec.Header())
	}
	rec = serve(httplimit.Middleware(closed, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	p := problemOf(t, rec)
	// A 503 says when to come back: Redis's return is not known, so one
	// second (there used to be no Retry-After).
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("RateLimit") != "" ||
		p.Type != "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity" {
		t.Errorf("fail closed: %d %v %+v", rec.Code, rec.Header(), p)
	}
	rec = serve(httplimit.Middleware(none, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 503 || p.Detail != "" || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("no fallback: %d %v %+v (no detail: it could expose the store)", rec.Code, rec.Header(), p)
	}
}

func TestMiddlewareErrors(t *testing.T) {
	f := newFrozen(t)
	l := newNamed(t, f.rdb, "test")
	rec := serve(httplimit.Middleware(l, httplimit.ByHeader("X-API-Key"))(okHandler), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 400 || p.Detail == "" {
		t.Errorf("no API key: %d %+v", rec.Code, p)
	}
	// An error of the app's own (a Select refusing a key): 500, without
	// its text, which is the app's to show.
	refuse := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return nil, errors.New("secret reason") })
	if rec := serve(httplimit.Middleware(refuse, httplimit.ByClientIP())(okHandler), get("192.0.2.1:1")); rec.Code != 500 || problemOf(t, rec).Detail != "" {
		t.Errorf("a refusal: %d %q", rec.Code, rec.Body)
	}
	// A cost out of range is the server's mistake, not an outage: 500,
	// through a limiter and through an Atomic rule alike.
	open := newNamed(t, f.rdb, "open", ratelimit.WithFallback(ratelimit.FailOpen))
	m, err := ratelimit.Atomic(l, open)
	if err != nil {
		t.Fatal(err)
	}
	for _, cost := range []int64{0, -3, 2e9} {
		for name, rule := range map[string]ratelimit.Rule{"limiter": l, "fail-open limiter": open, "multi": m} {
			h := httplimit.Middleware(rule, httplimit.ByClientIP(), httplimit.WithCost(func(*http.Request) int64 { return cost }))(okHandler)
			if rec := serve(h, get("192.0.2.1:1")); rec.Code != 500 {
				t.Errorf("%s, cost %d: %d, want 500", name, cost, rec.Code)
			}
		}
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}
	var gotErr error
	h := httplimit.Middleware(l, httplimit.ByHeader("X-API-Key"), httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		w.WriteHeader(401)
	}))(okHandler)
	if rec := serve(h, get("192.0.2.1:1")); rec.Code != 401 || !errors.Is(gotErr, httplimit.ErrNoKey) {
		t.Errorf("WithErrorHandler: %d, %v", rec.Code, gotErr)
	}
	var gotD ratelimit.Decision
	h = httplimit.Middleware(l, httplimit.ByClientIP(), httplimit.WithDenied(func(w http.ResponseWriter, r *http.Request, d ratelimit.Decision) {
		gotD = d
		w.WriteHeader(418)
	}))(okHandler)
	for i := 0; i < 10; i++ {
		serve(h, get("192.0.2.9:1"))
	}
	if rec := serve(h, get("192.0.2.9:1")); rec.Code != 418 || gotD.Name != "test" || gotD.Allowed || rec.Header().Get("Retry-After") == "" {
		t.Errorf("WithDenied: %d, %+v, headers %v", rec.Code, gotD, rec.Header())
	}
}

// Through the middleware: forged headers from a direct client all land in
// its own bucket; behind a trusted proxy each client has its own.
func TestMiddlewareSpoofing(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.Per(1, time.Hour))
	h := httplimit.Middleware(l, httplimit.ByClientIP(netip.MustParsePrefix("10.0.0.0/8")))(okHandler)
	if rec := serve(h, get("203.0.113.7:1")); rec.Code != 200 {
		t.Fatal(rec.Code)
	}
	for i, forged := range []string{"198.51.100.1", "198.51.100.2", "10.0.0.1"} {
		if rec := serve(h, get("203.0.113.7:1", "X-Forwarded-For", forged)); rec.Code != 429 {
			t.Errorf("forged X-Forwarded-For %d (%s) escaped the bucket: %d", i, forged, rec.Code)
		}
	}
	for _, client := range []string{"198.51.100.1", "198.51.100.2"} {
		if rec := serve(h, get("10.1.2.3:1", "X-Forwarded-For", client)); rec.Code != 200 {
			t.Errorf("client %s behind the proxy: %d", client, rec.Code)
		}
	}
	want := []string{"rl:api:{ip:198.51.100.1}", "rl:api:{ip:198.51.100.2}", "rl:api:{ip:203.0.113.7}"}
	if got := f.Keys(); !cmp.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
}

// Hostile key input ends up inside its own hash tag, escaped.
func TestMiddlewareHostileKeys(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.Per(1, time.Hour))
	h := httplimit.Middleware(l, httplimit.ByHeader("X-User"))(okHandler)
	for _, user := range []string{"alice", "alice}", "{bob}", "a:b", `x\`} {
		if rec := serve(h, get("192.0.2.1:1", "X-User", user)); rec.Code != 200 {
			t.Errorf("user %q: %d, want a bucket of its own", user, rec.Code)
		}
	}
	want := []string{
		`rl:api:{header:x-user:%7Bbob%7D}`,
		`rl:api:{header:x-user:a:b}`,
		`rl:api:{header:x-user:alice%7D}`,
		`rl:api:{header:x-user:alice}`,
		`rl:api:{header:x-user:x\}`,
	}
	if got := f.Keys(); !cmp.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
}

func TestKeyFuncs(t *testing.T) {
	r := httplimit.SetRoute(get("192.0.2.1:1", "X-API-Key", " k1 "), "GET /items/{id}")
	for _, tt := range []struct {
		f    httplimit.KeyFunc
		want string
	}{
		{httplimit.ByHeader("X-API-Key"), "header:x-api-key:k1"},
		{httplimit.FirstOf(httplimit.ByHeader("X-User"), httplimit.ByHeader("X-API-Key")), "header:x-api-key:k1"},
		{httplimit.FirstOf(httplimit.ByHeader("X-User"), httplimit.ByClientIP()), "ip:192.0.2.1"},
		{httplimit.ByRoute(httplimit.ByClientIP()), `route:GET /items/{id}:ip:192.0.2.1`},
	} {
		if got, err := tt.f(r); err != nil || got != tt.want {
			t.Errorf("%q, %v; want %q", got, err, tt.want)
		}
	}
	if _, err := httplimit.FirstOf(httplimit.ByHeader("X-User"))(r); !errors.Is(err, httplimit.ErrNoKey) {
		t.Errorf("FirstOf with no key: %v", err)
	}
	bad := func(*http.Request) (string, error) { return "", clientip.ErrNoAddr }
	if _, err := httplimit.FirstOf(bad, httplimit.ByHeader("X-API-Key"))(r); !errors.Is(err, clientip.ErrNoAddr) {
		t.Errorf("FirstOf stops at a real error: %v", err)
	}
}

// ByRoute counts each route of the standard mux apart with one limiter.
func TestByRoute(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "api", ratelimit.Per(1, time.Hour))
	mw := httplimit.Middleware(l, httplimit.ByRoute(httplimit.ByClientIP()))
	mux := http.NewServeMux()
	mux.Handle("/items/", mw(okHandler))
	mux.Handle("/users/", mw(okHandler))
	var codes []int
	for _, p := range []string{"/items/1", "/items/2", "/users/1"} {
		codes = append(codes, serve(mux, httptest.NewRequest("GET", p, nil)).Code)
	}
	if want := []int{200, 429, 200}; !cmp.Equal(codes, want) {
		t.Errorf("codes %v, want %v (one bucket per pattern)", codes, want)
	}
}

// WriteError, the default error handler, by kind of error.
func TestWriteError(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		detail bool
	}{
		{fmt.Errorf("%w: no X header", httplimit.ErrNoKey), 400, true},
		{fmt.Errorf("%w: RemoteAddr", clientip.ErrNoAddr), 400, true},
		{fmt.Errorf("%w: dial tcp: refused", ratelimit.ErrUnavailable), 503, false},
		{fmt.Errorf("ratelimit: %w", context.Canceled), 503, false},
		{fmt.Errorf("ratelimit: %w", context.DeadlineExceeded), 503, false},
		{fmt.Errorf("%w: cost n = 0", ratelimit.ErrInvalid), 500, true},
		{fmt.Errorf("%w for GET /x", httplimit.ErrNoRoute), 500, true},
		{fmt.Errorf("ratelimit: %w", bindings.ErrBadState), 500, false},
		{errors.New("unknown API key"), 500, false},
	} {
		rec := httptest.NewRecorder()
		httplimit.WriteError(rec, nil, tt.err)
		if p := problemOf(t, rec); rec.Code != tt.status || (p.Detail != "") != tt.detail {
			t.Errorf("%v: %d %+v, want %d, detail %v", tt.err, rec.Code, p, tt.status, tt.detail)
		}
	}
}

// A key locked out (ratelimit.WithLockout) gets a 429 whose problem says
// "locked out", with the lockout's Retry-After; a key merely over its
// limit keeps "Retry in".
func TestMiddlewareLockedOut(t *testing.T) {
	f := newFrozen(t)
	guard, _ := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(2), ratelimit.WithLockout(time.Hour))
	h := httplimit.Middleware(guard, httplimit.ByClientIP())(okHandler)
	for i := 0; i < 2; i++ { // the second uses up the limit and starts the lockout
		if rec := serve(h, get("192.0.2.1:1")); rec.Code != 200 {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	f.advance(2 * time.Minute) // the limit is full again; the lockout holds
	rec := serve(h, get("192.0.2.1:1"))
	p := problemOf(t, rec)
	if rec.Code != 429 || !strings.Contains(p.Detail, "Locked out") || !strings.Contains(p.Detail, "retry in 3480 s") || rec.Header().Get("Retry-After") != "3480" {
		t.Errorf("locked out: %d, Retry-After %q, problem %+v", rec.Code, rec.Header().Get("Retry-After"), p)
	}
	if !cmp.Equal(p.ViolatedPolicies, []string{"login"}) {
		t.Errorf("violated policies %v", p.ViolatedPolicies)
	}

	plain, _ := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(1))
	h = httplimit.Middleware(plain, httplimit.ByClientIP())(okHandler)
	serve(h, get("192.0.2.1:1"))
	rec = serve(h, get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 429 || strings.Contains(strings.ToLower(p.Detail), "locked") || p.Detail != "Retry in 60 s." {
		t.Errorf("over the limit, not locked out: %d, problem %+v", rec.Code, p)
	}
}
