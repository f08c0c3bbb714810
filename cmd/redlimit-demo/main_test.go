package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

func newTestServer(t *testing.T) *httptest.Server {
	srv, _ := newTestServerRedis(t)
	return srv
}

// newTestServerRedis is newTestServer and a client of its Redis.
func newTestServerRedis(t *testing.T) (*httptest.Server, *redis.Client) {
	t.Helper()
	rdb, backend, closeAll, err := connect("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv := httptest.NewServer(newServer(rdb, backend))
	t.Cleanup(srv.Close)
	return srv, rdb
}

func query(alg, rate, period, burst, client string) string {
	v := url.Values{"algorithm": {alg}, "rate": {rate}, "period": {period}, "burst": {burst}, "client": {client}}
	return v.Encode()
}

func mustGet(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// The page's API goes through the real middleware: a burst is allowed up
// to its size, then denied with the headers the middleware sets.
func TestLimited(t *testing.T) {
	srv, rdb := newTestServerRedis(t)
	for alg := ratelimit.GCRA; alg <= ratelimit.SlidingWindowCounter; alg++ {
		q := query(alg.String(), "3", "1m", "3", "client } {1")
		var codes []int
		var last *http.Response
		for i := 0; i < 4; i++ {
			last, _ = mustGet(t, srv.URL+"/api/limited?"+q)
			codes = append(codes, last.StatusCode)
		}
		if want := []int{200, 200, 200, 429}; !cmp.Equal(codes, want) {
			t.Errorf("%v: %v, want %v", alg, codes, want)
		}
		if last.Header.Get("Retry-After") == "" || last.Header.Get("RateLimit") == "" ||
			!strings.HasPrefix(last.Header.Get("RateLimit-Policy"), `"`+alg.String()+`";q=3;w=60`) {
			t.Errorf("%v: headers %v", alg, last.Header)
		}
		// Peeking counts nothing, and names the escaped key.
		_, body := mustGet(t, srv.URL+"/api/peek?"+q)
		var peek struct {
			Remaining int64
			Limit     int64
			RedisKey  string
		}
		json.Unmarshal([]byte(body), &peek)
		if peek.Remaining != 0 || peek.Limit != 3 || !strings.HasSuffix(peek.RedisKey, ":{client %7D %7B1}") {
			t.Errorf("%v: peek %s", alg, body)
		}
		if n, err := rdb.Exists(context.Background(), peek.RedisKey).Result(); n != 1 || err != nil {
			t.Errorf("%v: EXISTS %s: %d, %v: the page names a key Redis does not have", alg, peek.RedisKey, n, err)
		}
		resp, err := http.Post(srv.URL+"/api/reset?"+q, "", nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%v: reset %v %v", alg, resp, err)
		}
		if resp, _ := mustGet(t, srv.URL+"/api/limited?"+q); resp.StatusCode != 200 {
			t.Errorf("%v: after reset %d", alg, resp.StatusCode)
		}
	}
}

// Bad input gets a 400 whose detail the page shows.
func TestBadInput(t *testing.T) {
	srv := newTestServer(t)
	for _, tt := range []struct{ q, detail string }{
		{query("gcra", "abc", "1s", "3", "a"), `rate: "abc" is not a whole number`},
		{query("gcra", "0", "1s", "3", "a"), "Rate must be from 1 to 1e9"},
		{query("gcra", "3", "soon", "3", "a"), `period: "soon" is not a duration`},
		{query("gcra", "3", "1.5ms", "3", "a"), "Period must be a whole number of milliseconds"},
		{query("token_bucket", "3", "1s", "0", "a"), "Burst must be from 1 to 1e9"},
		{query("nope", "3", "1s", "3", "a"), "algorithm: pick one"},
		{query("gcra", "3", "1s", "3", " "), "client: give a key"},
		{query("sliding_window_log", "20000", "1s", "", "a"), "Rate must be at most 10000"},
		{query("gcra", "3", "1s", "3", "a") + "&cost=0", "cost: 0 requests, want 1 to 1e9"},
		{query("gcra", "3", "1s", "3", "a") + "&cost=-3", "cost: -3 requests, want 1 to 1e9"},
		{query("gcra", "3", "1s", "3", "a") + "&cost=2000000000", "cost: 2000000000 requests, want 1 to 1e9"},
		{query("gcra", "3", "1s", "3", "a") + "&cost=two", `cost: "two" is not a whole number`},
	} {
		for _, api := range []string{"/api/limited?", "/api/peek?"} {
			resp, body := mustGet(t, srv.URL+api+tt.q)
			var p httplimit.Problem
			json.Unmarshal([]byte(body), &p)
			if resp.StatusCode != 400 || !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("%s%s: %d %q, want 400 with %q", api, tt.q, resp.StatusCode, p.Detail, tt.detail)
			}
		}
	}
}

func TestPage(t *testing.T) {
	srv := newTestServer(t)
	for path, want := range map[string]string{
		"/":            `<div id="cmp-lanes">`,
		"/app.js":      "function draw()",
		"/compare.js":  "function runCompare()",
		"/lanes.js":    "function drawLane(",
		"/style.css":   "#meter-fill",
		"/favicon.svg": "<svg",
		"/favicon.ico": "<svg",
		"/api/info":    `"backend":"embedded miniredis"`,
	} {
		resp, body := mustGet(t, srv.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, no %q", path, resp.StatusCode, want)
		}
	}
	if resp, _ := mustGet(t, srv.URL+"/favicon.ico"); resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("/favicon.ico is %q", resp.Header.Get("Content-Type"))
	}
	// Nothing from elsewhere: the page works offline. (SVG's namespace is
	// a name, never fetched.)
	files, err := fs.Glob(web, "web/*")
	if err != nil || len(files) < 6 {
		t.Fatalf("embedded files %v, %v", files, err)
	}
	for _, f := range files {
		_, body := mustGet(t, srv.URL+strings.TrimPrefix(f, "web"))
		body = strings.ReplaceAll(body, "http://www.w3.org/2000/svg", "")
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).FindString(body); m != "" {
			t.Errorf("%s refers to %s", f, m)
		}
	}
}

// lines collects what run prints.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// run prints its URL, serves the page, and stops cleanly when its context
// ends (main ends it on Ctrl-C), finishing the request in flight.
func TestRunStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &lines{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, "", "127.0.0.1:0", out) }()
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)
	var base string
	for i := 0; i < 500 && base == ""; i++ {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = "http://" + m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if base == "" {
		t.Fatalf("no URL printed: %q", out.String())
	}
	if resp, _ := mustGet(t, base+"/api/limited?"+query("gcra", "1", "1s", "1", "a")); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "stopped") {
			t.Errorf("run: %v, printed %q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

// -redis ADDR: the same page on a real server.
func TestRealRedis(t *testing.T) {
	addr := redisserver.Maybe(t)
	if addr == "" {
		return
	}
	rdb, backend, closeAll, err := connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if backend != "redis-server at "+addr {
		t.Errorf("backend %q", backend)
	}
	srv := httptest.NewServer(newServer(rdb, backend))
	defer srv.Close()
	var codes []int
	for i := 0; i < 3; i++ {
		resp, _ := mustGet(t, srv.URL+"/api/limited?"+query("sliding_window_log", "2", "1m", "", "real"))
		codes = append(codes, resp.StatusCode)
	}
	if want := []int{200, 200, 429}; !cmp.Equal(codes, want) {
		t.Errorf("%v, want %v", codes, want)
	}
	if _, _, _, err := connect("127.0.0.1:1"); err == nil {
		t.Error("connect to a port without Redis: no error")
	}
}

// With -redis ADDR the demo prints the preflight's findings at start: a
// test server keeps nothing on disk.
func TestPreflightPrinted(t *testing.T) {
	addr := redisserver.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &lines{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, addr, "127.0.0.1:0", out) }()
	want := "preflight: warning persistence (" + addr + "): no AOF and no RDB save points"
	for i := 0; i < 500 && !strings.Contains(out.String(), want); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || !strings.Contains(out.String(), want) {
		t.Errorf("run: %v, printed %q; want a line with %q", err, out.String(), want)
	}
}
