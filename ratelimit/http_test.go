package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/ratelimit"
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

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) ratelimit.Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var p ratelimit.Problem
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
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			f.advance(250 * time.Millisecond) // off the window grid
			var last ratelimit.Decision
			l, err := ratelimit.New(f.rdb, ratelimit.PerMinute(3), ratelimit.WithAlgorithm(alg), ratelimit.WithName("api"),
				ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { last = e.Decision }))
			if err != nil {
				t.Fatal(err)
			}
			h := ratelimit.Middleware(l, ratelimit.ByClientIP())(okHandler)
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
	if h.Get("X-RateLimit-Limit") != strconv.FormatInt(d.Limit, 10) || h.Get("X-RateLimit-Remaining") != strconv.FormatInt(d.Remaining, 10) {
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
	l, _ := ratelimit.New(f.rdb, ratelimit.PerSecond(5), ratelimit.WithName("api"))
	h := ratelimit.Middleware(l, ratelimit.ByClientIP(), ratelimit.WithCost(func(*http.Request) int64 { return 6 }))(okHandler)
	rec := serve(h, get("192.0.2.1:1"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "" {
		t.Errorf("a cost above the burst: %d, Retry-After %q; want 429 without Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	sameSF(t, "RateLimit", rec.Header().Get("RateLimit"), `"api";r=5;t=0`)
	if p := problemOf(t, rec); p.Detail == "" {
		t.Errorf("problem %+v", p)
	}
	h = ratelimit.Middleware(l, ratelimit.ByClientIP(), ratelimit.WithCost(func(*http.Request) int64 { return 0 }))(okHandler)
	if rec := serve(h, get("192.0.2.1:1")); rec.Code != 500 {
		t.Errorf("a cost of 0: %d, want the error handler's 500 (ErrInvalidCost)", rec.Code)
	}
}

// Several limits: one item each in RateLimit, the strictest in the X-
// fields, the longest wait in Retry-After, every denier in the problem.
func TestMiddlewareSeveralLimits(t *testing.T) {
	f := newFrozen(t)
	burst, _ := ratelimit.New(f.rdb, ratelimit.PerSecond(2), ratelimit.WithName("burst"))
	hourly, _ := ratelimit.New(f.rdb, ratelimit.PerHour(3), ratelimit.WithName("hourly"), ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))
	h := ratelimit.Middleware(ratelimit.Limiters{burst, hourly}, ratelimit.ByClientIP())(okHandler)
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
	open := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithName("open"), ratelimit.OnFailure(ratelimit.FailOpen))
	closed := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithName("closed"), ratelimit.OnFailure(ratelimit.FailClosed))
	none := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithName("none"))

	rec := serve(ratelimit.Middleware(open, ratelimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	if rec.Code != 200 || rec.Header().Get("RateLimit") != "" || rec.Header().Get("X-RateLimit-Remaining") != "" {
		t.Errorf("fail open: %d %v", rec.Code, rec.Header())
	}
	rec = serve(ratelimit.Middleware(closed, ratelimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	p := problemOf(t, rec)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "" || rec.Header().Get("RateLimit") != "" ||
		p.Type != "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity" {
		t.Errorf("fail closed: %d %v %+v", rec.Code, rec.Header(), p)
	}
	rec = serve(ratelimit.Middleware(none, ratelimit.ByClientIP())(okHandler), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 503 || p.Detail != "" {
		t.Errorf("no fallback: %d %+v (no detail: it could expose the store)", rec.Code, p)
	}
}

func TestMiddlewareErrors(t *testing.T) {
	f := newFrozen(t)
	l := newLimiter(t, f.rdb, ratelimit.GCRA)
	rec := serve(ratelimit.Middleware(l, ratelimit.ByHeader("X-API-Key"))(okHandler), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 400 || p.Detail == "" {
		t.Errorf("no API key: %d %+v", rec.Code, p)
	}
	tiers := ratelimit.Tiers{Tier: func(*http.Request) string { return "gold" }, Rules: map[string]ratelimit.Rule{"free": l}}
	if rec := serve(ratelimit.Middleware(tiers, ratelimit.ByClientIP())(okHandler), get("192.0.2.1:1")); rec.Code != 500 {
		t.Errorf("unknown tier: %d", rec.Code)
	}
	// A cost out of range is the server's mistake, not an outage: 500,
	// through AllowAll and through a Multi alike.
	open := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithName("open"), ratelimit.OnFailure(ratelimit.FailOpen))
	m, err := ratelimit.NewMulti(l, open)
	if err != nil {
		t.Fatal(err)
	}
	for _, cost := range []int64{0, -3, 2e9} {
		for name, rule := range map[string]ratelimit.Rule{"limiter": l, "fail-open limiter": open, "multi": m} {
			h := ratelimit.Middleware(rule, ratelimit.ByClientIP(), ratelimit.WithCost(func(*http.Request) int64 { return cost }))(okHandler)
			if rec := serve(h, get("192.0.2.1:1")); rec.Code != 500 {
				t.Errorf("%s, cost %d: %d, want 500", name, cost, rec.Code)
			}
		}
	}
	if keys := f.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}
	var gotErr error
	h := ratelimit.Middleware(l, ratelimit.ByHeader("X-API-Key"), ratelimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		w.WriteHeader(401)
	}))(okHandler)
	if rec := serve(h, get("192.0.2.1:1")); rec.Code != 401 || !errors.Is(gotErr, ratelimit.ErrNoKey) {
		t.Errorf("WithErrorHandler: %d, %v", rec.Code, gotErr)
	}
	var gotV ratelimit.Verdict
	h = ratelimit.Middleware(l, ratelimit.ByClientIP(), ratelimit.WithDenied(func(w http.ResponseWriter, r *http.Request, v ratelimit.Verdict) {
		gotV = v
		w.WriteHeader(418)
	}))(okHandler)
	for i := 0; i < 10; i++ {
		serve(h, get("192.0.2.9:1"))
	}
	if rec := serve(h, get("192.0.2.9:1")); rec.Code != 418 || gotV.Key != "ip:192.0.2.9" || gotV.Allowed() || rec.Header().Get("Retry-After") == "" {
		t.Errorf("WithDenied: %d, %+v, headers %v", rec.Code, gotV, rec.Header())
	}
}

// A key comes from where the user says: no header can choose another's
// bucket unless the proxy that sent it is trusted.
func TestClientIPSpoofing(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	xff := ratelimit.ClientIP{TrustedProxies: proxies}
	fwd := ratelimit.ClientIP{TrustedProxies: proxies, Header: "Forwarded"}
	tests := []struct {
		name string
		c    ratelimit.ClientIP
		r    *http.Request
		want string // key, or "" for ErrClientIP
	}{
		{"direct", xff, get("203.0.113.7:4242"), "ip:203.0.113.7"},
		{"direct, forged XFF", xff, get("203.0.113.7:4242", "X-Forwarded-For", "198.51.100.1"), "ip:203.0.113.7"},
		{"direct, forged Forwarded", fwd, get("203.0.113.7:4242", "Forwarded", "for=198.51.100.1"), "ip:203.0.113.7"},
		{"no trusted proxies", ratelimit.ClientIP{}, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1"), "ip:10.0.0.1"},
		{"trusted proxy", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1"), "ip:198.51.100.1"},
		{"trusted proxy, client forges the left", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, 198.51.100.1"), "ip:198.51.100.1"},
		{"two header lines", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4", "X-Forwarded-For", "198.51.100.1"), "ip:198.51.100.1"},
		{"chain of trusted proxies", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, 198.51.100.1, 10.9.9.9, 10.0.0.2"), "ip:198.51.100.1"},
		{"every hop trusted", xff, get("10.0.0.1:1", "X-Forwarded-For", "10.1.1.1, 10.0.0.2"), "ip:10.1.1.1"},
		{"trusted, no header", xff, get("10.0.0.1:1"), "ip:10.0.0.1"},
		{"XFF with a port", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1:5678"), "ip:198.51.100.1"},
		{"XFF garbage", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, nonsense"), ""},
		{"XFF empty hop", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1,"), ""},
		{"Forwarded ignored by the XFF reader", xff, get("10.0.0.1:1", "Forwarded", "for=1.2.3.4"), "ip:10.0.0.1"},
		{"XFF ignored by the Forwarded reader", fwd, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4"), "ip:10.0.0.1"},
		{"Forwarded", fwd, get("10.0.0.1:1", "Forwarded", "for=198.51.100.1;proto=https;by=10.0.0.1"), "ip:198.51.100.1"},
		{"Forwarded list", fwd, get("10.0.0.1:1", "Forwarded", `for=1.2.3.4, For="198.51.100.1:80", for=10.0.0.3`), "ip:198.51.100.1"},
		{"Forwarded IPv6", fwd, get("10.0.0.1:1", "Forwarded", `for="[2001:db8:cafe::17]:4711"`), "ip:2001:db8:cafe::/64"},
		{"Forwarded quoted comma", fwd, get("10.0.0.1:1", "Forwarded", `for=1.2.3.4;x="a,b", for=198.51.100.2`), "ip:198.51.100.2"},
		{"Forwarded unknown", fwd, get("10.0.0.1:1", "Forwarded", "for=unknown"), ""},
		{"Forwarded obfuscated", fwd, get("10.0.0.1:1", "Forwarded", "for=_hidden"), ""},
		{"Forwarded without for", fwd, get("10.0.0.1:1", "Forwarded", "proto=https"), ""},
		{"Forwarded unterminated", fwd, get("10.0.0.1:1", "Forwarded", `for="1.2.3.4`), ""},
		{"IPv6 per /64", xff, get("[2001:db8::1]:1"), "ip:2001:db8::/64"},
		{"IPv6 same /64", xff, get("[2001:db8::ffff:1]:1"), "ip:2001:db8::/64"},
		{"IPv6 per address", ratelimit.ClientIP{IPv6Bits: 128}, get("[2001:db8::1]:1"), "ip:2001:db8::1/128"},
		{"IPv4-mapped", xff, get("[::ffff:192.0.2.1]:1"), "ip:192.0.2.1"},
		{"IPv6 trusted proxy", xff, get("[fd00::1]:1", "X-Forwarded-For", "2001:db8:1:2:3::4"), "ip:2001:db8:1:2::/64"},
		{"bad RemoteAddr", xff, get("pipe"), ""},
		{"unknown header name", ratelimit.ClientIP{TrustedProxies: proxies, Header: "X-Real-IP"}, get("10.0.0.1:1"), ""},
	}
	for _, tt := range tests {
		got, err := tt.c.Key(tt.r)
		if tt.want == "" {
			if !errors.Is(err, ratelimit.ErrClientIP) {
				t.Errorf("%s: %q, %v; want ErrClientIP", tt.name, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// Through the middleware: forged headers from a direct client all land in
// its own bucket; behind a trusted proxy each client has its own.
func TestMiddlewareSpoofing(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, ratelimit.PerHour(1), ratelimit.WithName("api"))
	h := ratelimit.Middleware(l, ratelimit.ByClientIP(netip.MustParsePrefix("10.0.0.0/8")))(okHandler)
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
	l, _ := ratelimit.New(f.rdb, ratelimit.PerHour(1), ratelimit.WithName("api"))
	h := ratelimit.Middleware(l, ratelimit.ByHeader("X-User"))(okHandler)
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
	r := get("192.0.2.1:1", "X-API-Key", " k1 ")
	for _, tt := range []struct {
		f    ratelimit.KeyFunc
		want string
	}{
		{ratelimit.ByHeader("X-API-Key"), "header:x-api-key:k1"},
		{ratelimit.FirstOf(ratelimit.ByHeader("X-User"), ratelimit.ByHeader("X-API-Key")), "header:x-api-key:k1"},
		{ratelimit.FirstOf(ratelimit.ByHeader("X-User"), ratelimit.ByClientIP()), "ip:192.0.2.1"},
		{ratelimit.ByRoute(ratelimit.ByClientIP()), `route:GET /items:ip:192.0.2.1`},
	} {
		if got, err := tt.f(r); err != nil || got != tt.want {
			t.Errorf("%q, %v; want %q", got, err, tt.want)
		}
	}
	if _, err := ratelimit.FirstOf(ratelimit.ByHeader("X-User"))(r); !errors.Is(err, ratelimit.ErrNoKey) {
		t.Errorf("FirstOf with no key: %v", err)
	}
	bad := func(*http.Request) (string, error) { return "", ratelimit.ErrClientIP }
	if _, err := ratelimit.FirstOf(bad, ratelimit.ByHeader("X-API-Key"))(r); !errors.Is(err, ratelimit.ErrClientIP) {
		t.Errorf("FirstOf stops at a real error: %v", err)
	}
}

// ByRoute counts each route of the standard mux apart with one limiter.
func TestByRoute(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, ratelimit.PerHour(1), ratelimit.WithName("api"))
	mw := ratelimit.Middleware(l, ratelimit.ByRoute(ratelimit.ByClientIP()))
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
