package polyglot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/child"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/clientip"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// fastapiPython is python(t), and it must import FastAPI and httpx (what
// Starlette's TestClient needs) too.
func fastapiPython(t *testing.T) string {
	t.Helper()
	py := python(t)
	if out, err := exec.Command(py, "-c", "import fastapi, httpx").CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("%s cannot import FastAPI and httpx (%s)", py, lastLine(out)),
			"apt-get install -y python3-fastapi python3-httpx (Debian's, for /usr/bin/python3)")
	}
	return py
}

// A policy is one limit of the example app, the same on both sides.
type policy struct {
	Rate      int64  `json:"rate"`
	PeriodMs  int64  `json:"period_ms"`
	Burst     int64  `json:"burst"`
	Algorithm string `json:"algorithm"`
}

// A request is one request of the traffic: its path, the connection's
// peer, its headers and what the middleware counts for it.
type request struct {
	Path    string            `json:"path"`
	Peer    string            `json:"peer"`
	Headers map[string]string `json:"headers,omitempty"`
	Cost    int64             `json:"cost,omitempty"`
}

// An answer is what an app answered: status, the headers the limit sets,
// the body.
type answer struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// The plans of examples/python/app.py, at limits that refill nothing while
// a test runs (3 per hour: a unit every 20 minutes), and the users of its
// API keys.
var (
	fastapiPolicies = map[string]policy{
		"ip":   {Rate: 3, PeriodMs: 3600000, Burst: 3, Algorithm: "token_bucket"},
		"free": {Rate: 3, PeriodMs: 3600000, Burst: 3, Algorithm: "gcra"},
		"pro":  {Rate: 10, PeriodMs: 3600000, Burst: 5, Algorithm: "gcra"},
	}
	fastapiUsers = map[string][2]string{"free-key": {"alice", "free"}, "pro-key": {"bob", "pro"}}
	trusted      = []string{"10.0.0.0/8"}
)

// goApp is examples/python/app.py written with the Go middleware: /health
// unlimited, an unknown API key a 401, anonymous requests per client
// address, users per plan.
func goApp(t *testing.T, rdb ratelimit.Client, prefix string, fb ratelimit.Fallback, costs func(*http.Request) int64) http.Handler {
	t.Helper()
	limiters := map[string]*ratelimit.Limiter{}
	for name, p := range fastapiPolicies {
		alg := ratelimit.GCRA
		if p.Algorithm == "token_bucket" {
			alg = ratelimit.TokenBucket
		}
		l, err := ratelimit.New(rdb, name, ratelimit.Limit{Rate: p.Rate, Period: time.Duration(p.PeriodMs) * time.Millisecond, Burst: p.Burst},
			ratelimit.WithAlgorithm(alg), ratelimit.WithPrefix(prefix+name+":"), ratelimit.WithFallback(fb))
		if err != nil {
			t.Fatal(err)
		}
		limiters[name] = l
	}
	var nets []netip.Prefix
	for _, p := range trusted {
		nets = append(nets, netip.MustParsePrefix(p))
	}
	byIP := clientip.Resolver{TrustedProxies: nets}
	rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
		for _, u := range fastapiUsers {
			if key == "user:"+u[0] {
				return limiters[u[1]], nil
			}
		}
		return limiters["ip"], nil
	})
	key := func(r *http.Request) (string, error) {
		if k := r.Header.Get("X-API-Key"); k != "" {
			return "user:" + fastapiUsers[k][0], nil
		}
		return byIP.Key(r)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hello":"world"}`))
	})
	limited := httplimit.Middleware(rule, key, httplimit.WithCost(costs))(hello)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
			return
		}
		if k := r.Header.Get("X-API-Key"); k != "" {
			if _, ok := fastapiUsers[k]; !ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"detail":"unknown API key"}`))
				return
			}
		}
		limited.ServeHTTP(w, r)
	})
}

// serveGo sends the requests through h, one after another, as the Python
// runner does through the FastAPI app.
func serveGo(h http.Handler, reqs []request) []answer {
	var out []answer
	for _, q := range reqs {
		r := httptest.NewRequest(http.MethodGet, q.Path, nil)
		r.RemoteAddr = net.JoinHostPort(q.Peer, "50000")
		for k, v := range q.Headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		a := answer{Status: w.Code, Headers: map[string]string{}, Body: w.Body.String()}
		for k := range w.Header() {
			a.Headers[strings.ToLower(k)] = w.Header().Get(k)
		}
		out = append(out, a)
	}
	return out
}

// servePython runs tests/polyglot/testdata/fastapi_replay.py: the same
// requests through examples/python/app.py in Starlette's TestClient.
func servePython(t *testing.T, py, addr, prefix, onFailure string, reqs []request) []answer {
	t.Helper()
	cfg, err := json.Marshal(map[string]any{
		"redis": addr, "prefix": prefix, "on_failure": onFailure, "trusted": trusted,
		"policies": fastapiPolicies, "requests": reqs,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join(root, "tests", "polyglot", "testdata", "fastapi_replay.py"))
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stdin = bytes.NewReader(cfg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("fastapi_replay.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var out []answer
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("fastapi_replay.py printed %q: %v", line, err)
		}
		out = append(out, a)
	}
	if len(out) != len(reqs) {
		t.Fatalf("fastapi_replay.py answered %d of %d requests:\n%s", len(out), len(reqs), stderr.String())
	}
	return out
}

// limitHeaders are the fields the middleware sets; both sides must send
// the same ones.
var limitHeaders = []string{"ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "content-type"}

// digits matches each number in a header or body, which compares within
// tol seconds: both sides decide on Redis's clock, one after the other.
var digits = regexp.MustCompile(`\d+`)

// sameAnswer reports how got differs from want: the status, which limit
// fields are present, every field and the body exactly except their
// numbers of seconds (t=, Retry-After, X-RateLimit-Reset, "Retry in N s"),
// which may differ by tol. A 400's detail is each language's own error.
func sameAnswer(got, want answer, tol int64) string {
	if got.Status != want.Status {
		return fmt.Sprintf("status %d, Go %d", got.Status, want.Status)
	}
	for _, h := range limitHeaders {
		g, gok := got.Headers[h]
		w, wok := want.Headers[h]
		if gok != wok {
			return fmt.Sprintf("%s: %q (present %v), Go %q (present %v)", h, g, gok, w, wok)
		}
		seconds := h == "retry-after" || h == "x-ratelimit-reset"
		if !nearly(g, w, seconds, tol) {
			return fmt.Sprintf("%s: %q, Go %q", h, g, w)
		}
	}
	if got.Status == http.StatusBadRequest {
		var g, w map[string]any
		if json.Unmarshal([]byte(got.Body), &g) != nil || json.Unmarshal([]byte(want.Body), &w) != nil {
			return fmt.Sprintf("400 bodies %q, Go %q", got.Body, want.Body)
		}
		if g["type"] != w["type"] || g["title"] != w["title"] || g["status"] != w["status"] || g["detail"] == "" {
			return fmt.Sprintf("400 body %q, Go %q", got.Body, want.Body)
		}
		return ""
	}
	if !nearly(strings.TrimSpace(got.Body), strings.TrimSpace(want.Body), false, tol) {
		return fmt.Sprintf("body %q, Go %q", got.Body, want.Body)
	}
	return ""
}

// nearly compares a and b with their numbers replaced: equal elsewhere,
// and each number within tol where it counts seconds (every number of a
// field in seconds; in the RateLimit field only t=; in a body only the
// detail's "Retry in N s").
func nearly(a, b string, seconds bool, tol int64) bool {
	if a == b {
		return true
	}
	an, bn := digits.FindAllStringIndex(a, -1), digits.FindAllStringIndex(b, -1)
	if len(an) != len(bn) || digits.ReplaceAllString(a, "#") != digits.ReplaceAllString(b, "#") {
		return false
	}
	for i := range an {
		x, _ := strconv.ParseInt(a[an[i][0]:an[i][1]], 10, 64)
		y, _ := strconv.ParseInt(b[bn[i][0]:bn[i][1]], 10, 64)
		timed := seconds || strings.HasSuffix(a[:an[i][0]], "t=") || strings.HasSuffix(a[:an[i][0]], "Retry in ")
		if x != y && (!timed || x-y > tol || y-x > tol) {
			return false
		}
	}
	return true
}

func compareApps(t *testing.T, reqs []request, got, want []answer, tol int64) {
	t.Helper()
	for i := range reqs {
		if diff := sameAnswer(got[i], want[i], tol); diff != "" {
			t.Errorf("request %d %+v: Python %s\n  Python %+v\n  Go     %+v", i, reqs[i], diff, got[i], want[i])
		}
	}
}

// fastapiTraffic is the traffic both apps get: anonymous callers from
// IPv4 and IPv6 (one /64 is one caller, an IPv4-mapped address is the IPv4
// one), through a trusted proxy and with a forged X-Forwarded-For, users
// of both plans past their limits, a cost that can never pass, an unknown
// key, /health, and a peer that is no address.
func fastapiTraffic() []request {
	var reqs []request
	add := func(n int, q request) {
		for range n {
			reqs = append(reqs, q)
		}
	}
	add(4, request{Path: "/", Peer: "203.0.113.7"})
	add(1, request{Path: "/", Peer: "::ffff:203.0.113.7"})
	add(2, request{Path: "/", Peer: "2001:db8::1"})
	add(2, request{Path: "/", Peer: "2001:db8::2"})
	add(2, request{Path: "/", Peer: "10.0.0.1", Headers: map[string]string{"X-Forwarded-For": "203.0.113.7, 198.51.100.9, 10.0.0.2"}})
	add(2, request{Path: "/", Peer: "198.51.100.20", Headers: map[string]string{"X-Forwarded-For": "198.51.100.9"}})
	add(1, request{Path: "/", Peer: "10.0.0.1", Headers: map[string]string{"X-Forwarded-For": "not-an-address"}})
	add(5, request{Path: "/", Peer: "203.0.113.7", Headers: map[string]string{"X-API-Key": "free-key"}})
	add(1, request{Path: "/", Peer: "203.0.113.7", Headers: map[string]string{"X-API-Key": "free-key"}, Cost: 4})
	add(4, request{Path: "/", Peer: "203.0.113.8", Headers: map[string]string{"X-API-Key": "pro-key"}, Cost: 2})
	add(2, request{Path: "/", Peer: "203.0.113.8", Headers: map[string]string{"X-API-Key": "nobody's"}})
	add(2, request{Path: "/health", Peer: "203.0.113.9"})
	add(1, request{Path: "/", Peer: "testclient"})
	for i := range reqs {
		if reqs[i].Cost == 0 {
			reqs[i].Cost = 1
		}
		h := map[string]string{"X-Test-Seq": strconv.Itoa(i)}
		for k, v := range reqs[i].Headers {
			h[k] = v
		}
		reqs[i].Headers = h
	}
	return reqs
}

func costOf(reqs []request) func(*http.Request) int64 {
	return func(r *http.Request) int64 {
		i, _ := strconv.Atoi(r.Header.Get("X-Test-Seq"))
		return reqs[i].Cost
	}
}

// TestFastAPIMatchesGo sends the same traffic through examples/python's
// FastAPI app (Starlette's TestClient, redis-py) and through the same app
// written with the Go middleware, each on its own prefix of one real
// redis-server, and holds every answer to Go's: status, the RateLimit
// fields, Retry-After, the problem body. Both leave the same keys behind.
func TestFastAPIMatchesGo(t *testing.T) {
	py := fastapiPython(t)
	rdb, addr := client(t)
	ctx := context.Background()
	reqs := fastapiTraffic()

	start := time.Now()
	got := servePython(t, py, addr, "rl:py:", "error", reqs)
	want := serveGo(goApp(t, rdb, "rl:go:", ratelimit.Fallback{}, costOf(reqs)), reqs)
	tol := int64(time.Since(start)/time.Second) + 1

	compareApps(t, reqs, got, want, tol)
	statuses := map[int]int{}
	for _, a := range want {
		statuses[a.Status]++
	}
	// The traffic means something: every kind of answer, as designed.
	if diff := cmp.Diff(map[int]int{200: 17, 429: 8, 401: 2, 400: 2}, statuses); diff != "" {
		t.Errorf("the Go app's statuses (-want +got):\n%s", diff)
	}

	keys := func(prefix string) []string {
		ks, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := range ks {
			ks[i] = strings.TrimPrefix(ks[i], prefix)
		}
		sort.Strings(ks)
		return ks
	}
	wantKeys := []string{"free:{user:alice}", "ip:{ip:198.51.100.20}", "ip:{ip:198.51.100.9}", "ip:{ip:2001:db8::/64}", "ip:{ip:203.0.113.7}", "pro:{user:bob}"}
	if diff := cmp.Diff(wantKeys, keys("rl:go:")); diff != "" {
		t.Errorf("the Go app's keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keys("rl:go:"), keys("rl:py:")); diff != "" {
		t.Errorf("Redis keys, by the part after the prefix (-Go +Python):\n%s", diff)
	}
}

// TestFastAPIRedisDown: with Redis unreachable, each fallback
// answers in Python as in Go: an error is a 503, fail-open serves the
// request with the policy field only, fail-closed is the draft's 503.
func TestFastAPIRedisDown(t *testing.T) {
	py := fastapiPython(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	reqs := []request{
		{Path: "/", Peer: "203.0.113.7", Cost: 1, Headers: map[string]string{"X-Test-Seq": "0"}},
		{Path: "/", Peer: "203.0.113.7", Cost: 1, Headers: map[string]string{"X-Test-Seq": "1", "X-API-Key": "pro-key"}},
	}
	for _, tt := range []struct {
		python string
		goFB   ratelimit.Fallback
		status int
	}{
		{"error", ratelimit.Fallback{}, 503},
		{"open", ratelimit.FailOpen, 200},
		{"closed", ratelimit.FailClosed, 503},
	} {
		t.Run(tt.python, func(t *testing.T) {
			got := servePython(t, py, dead, "rl:py:", tt.python, reqs)
			want := serveGo(goApp(t, rdb, "rl:go:", tt.goFB, costOf(reqs)), reqs)
			compareApps(t, reqs, got, want, 0)
			for i, a := range want {
				if a.Status != tt.status {
					t.Errorf("request %d: Go answered %d, want %d", i, a.Status, tt.status)
				}
			}
		})
	}
}

// TestFastAPIApp runs the example as its README says, one command from
// examples/python (with --redis and a free port), sends it a few requests
// and stops it as Ctrl-C does.
func TestFastAPIApp(t *testing.T) {
	py := fastapiPython(t)
	if out, err := exec.Command(py, "-c", "import uvicorn").CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("%s cannot import uvicorn (%s)", py, lastLine(out)), "apt-get install -y python3-uvicorn")
	}
	_, addr := client(t)
	cmd := child.Tie(exec.Command(py, "app.py", "--redis", addr, "--listen", "127.0.0.1:0"))
	cmd.Dir = filepath.Join(root, "examples", "python")
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var url string
	select {
	case l := <-lines:
		if url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(l); url == "" {
			t.Fatalf("app.py printed %q, no URL\n%s", l, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("app.py printed no URL within a minute\n%s", stderr.String())
	}

	// Connections left open would make uvicorn's graceful stop wait.
	noKeepAlive := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var got []string
	for _, key := range []string{"", "", "free-key", "invented"} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("RateLimit")))
	}
	want := []string{`200 "ip";r=9;t=6`, `200 "ip";r=8;t=12`, `200 "free";r=99;t=1`, "401 "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status and RateLimit of each request (-want +got):\n%s", diff)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if err := cmd.Wait(); err != nil || len(rest) == 0 || rest[len(rest)-1] != "stopped" {
		t.Errorf("after Ctrl-C app.py exited with %v, printing %q\n%s", err, rest, stderr.String())
	}
}
