package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// web holds the page: HTML, CSS and a small script that draws its own
// chart. Everything is embedded, nothing comes from a CDN, so the demo
// works offline.
//
//go:embed web
var web embed.FS

type server struct {
	rdb     *redis.Client
	backend string
	mux     *http.ServeMux
	leases  *leases
}

// newServer serves the page and its API:
//
//	GET  /api/info      the algorithms, and which Redis decides
//	GET  /api/compare   one limit and one traffic pattern through every
//	                    algorithm (compare.go)
//	GET  /api/limited   a request limited by the ratelimit middleware: 200,
//	                    or 429 with the headers and problem body it sets
//	GET  /api/peek      the limiter's state now, counting nothing
//	POST /api/reset     forget the client's state
//
// The last three take the limit in the query: algorithm, rate, period (a
// Go duration such as 2s), burst (ignored by the window algorithms, which
// admit rate per period), client (the key) and cost (1 to 1e9, 1 by
// default). A limit the library refuses is a 400 whose detail is the
// library's error; a field that is not a number, or a cost out of range,
// is a 400 that names the field.
//
// Then the panels of what only redlimit has, each with fixed limits:
//
//	GET       /api/two        two limits at once, Atomic against All (twolimits.go)
//	GET, POST /api/tier       a plan switch through ratelimit.Select (tiers.go)
//	GET, POST /api/denycache  hammering with and without a deny cache (denycache.go)
//	GET, POST /api/outage     Redis down, under each fallback (outage.go)
//	GET, POST /api/leases     jobs holding leases of inflight (leases.go)
func newServer(rdb *redis.Client, backend string) *server {
	s := &server{rdb: rdb, backend: backend, mux: http.NewServeMux()}
	static, _ := fs.Sub(web, "web")
	mux := s.mux
	mux.Handle("GET /", http.FileServer(http.FS(static)))
	// Browsers ask for /favicon.ico whatever the page links.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	mux.HandleFunc("GET /api/compare", s.compare)
	mux.HandleFunc("GET /api/info", s.info)
	mux.HandleFunc("GET /api/limited", s.limited)
	mux.HandleFunc("GET /api/peek", s.peek)
	mux.HandleFunc("POST /api/reset", s.reset)
	// What only redlimit has: their limits are fixed, so building them
	// cannot fail unless this file is wrong.
	mux.HandleFunc("GET /api/two", s.two)
	tiers, err := newTiers(s)
	must(err)
	mux.Handle("GET /api/tier", tiers)
	mux.Handle("POST /api/tier", tiers)
	cache, err := newDenyCache(s)
	must(err)
	mux.Handle("GET /api/denycache", cache)
	mux.Handle("POST /api/denycache", cache)
	outage, err := newOutage(s)
	must(err)
	mux.Handle("GET /api/outage", outage)
	mux.Handle("POST /api/outage", outage)
	s.leases, err = newLeases(s)
	must(err)
	mux.Handle("GET /api/leases", s.leases)
	mux.Handle("POST /api/leases", s.leases)
	return s
}

func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("redlimit-demo: a panel's fixed limits are refused: %v", err))
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops the jobs of the leases panel (their leases then expire).
func (s *server) Close() { s.leases.stop() }

func (s *server) info(w http.ResponseWriter, r *http.Request) {
	type algorithm struct {
		Name     string `json:"name"`
		Windowed bool   `json:"windowed"`
	}
	var algs []algorithm
	for _, a := range algorithms() {
		algs = append(algs, algorithm{a.String(), s.windowed(a)})
	}
	writeJSON(w, map[string]any{"backend": s.backend, "algorithms": algs})
}

// limited runs the request through the real middleware, keyed by the
// client field.
func (s *server) limited(w http.ResponseWriter, r *http.Request) {
	l, _, cost, err := s.limiter(r.URL.Query())
	if err != nil {
		badRequest(w, err)
		return
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ok": true})
	})
	httplimit.Middleware(l, byClient, httplimit.WithCost(func(*http.Request) int64 { return cost }))(ok).ServeHTTP(w, r)
}

func (s *server) peek(w http.ResponseWriter, r *http.Request) {
	l, prefix, _, err := s.limiter(r.URL.Query())
	if err != nil {
		badRequest(w, err)
		return
	}
	d, err := l.Peek(r.Context(), r.URL.Query().Get("client"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{
		"allowed":      d.Allowed,
		"limit":        d.Limit.Burst,
		"remaining":    d.Remaining,
		"resetAfterMs": d.ResetAfter.Milliseconds(),
		"redisKey":     redisKey(prefix, r.URL.Query().Get("client")),
		"at":           time.Now().UnixMilli(),
	})
}

func (s *server) reset(w http.ResponseWriter, r *http.Request) {
	l, _, _, err := s.limiter(r.URL.Query())
	if err != nil {
		badRequest(w, err)
		return
	}
	if err := l.Reset(r.Context(), r.URL.Query().Get("client")); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func byClient(r *http.Request) (string, error) {
	return r.URL.Query().Get("client"), nil
}

// limiter builds the limiter the query describes, and returns its key
// prefix and the request's cost. Each limit gets a prefix of its own, so
// changing a field on the page starts afresh, while the same settings keep
// their state between requests.
func (s *server) limiter(q url.Values) (*ratelimit.Limiter, string, int64, error) {
	alg, ok := algorithm(q.Get("algorithm"))
	if !ok {
		return nil, "", 0, fmt.Errorf("algorithm: pick one of the list")
	}
	rate, err := wholeNumber("rate", q.Get("rate"))
	if err != nil {
		return nil, "", 0, err
	}
	period, err := time.ParseDuration(strings.TrimSpace(q.Get("period")))
	if err != nil {
		return nil, "", 0, fmt.Errorf("period: %q is not a duration such as 1s, 500ms or 1m", q.Get("period"))
	}
	burst := rate
	if !s.windowed(alg) {
		if burst, err = wholeNumber("burst", q.Get("burst")); err != nil {
			return nil, "", 0, err
		}
	}
	cost := int64(1)
	if c := q.Get("cost"); c != "" {
		if cost, err = wholeNumber("cost", c); err != nil {
			return nil, "", 0, err
		}
		if cost < 1 || cost > 1e9 {
			return nil, "", 0, fmt.Errorf("cost: %d requests, want 1 to 1e9", cost)
		}
	}
	if strings.TrimSpace(q.Get("client")) == "" {
		return nil, "", 0, fmt.Errorf("client: give a key, such as alice")
	}
	limit := ratelimit.Limit{Rate: rate, Period: period, Burst: burst}
	prefix := fmt.Sprintf("demo:%v:%d/%v/%d:", alg, rate, period, burst)
	l, err := ratelimit.New(s.rdb, alg.String(), limit, ratelimit.WithAlgorithm(alg), ratelimit.WithPrefix(prefix))
	return l, prefix, cost, err
}

// redisKey is where a limiter with prefix keeps client's state, as
// docs/limiters.md lays keys out: the client as a {hash tag}, with '%', '{'
// and '}' percent-encoded (TestLimited holds it to the key Redis has).
func redisKey(prefix, client string) string {
	tag := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(client)
	if len(tag) > 200 {
		return prefix + "{%#<SHA-256 of the client>}"
	}
	return prefix + "{" + tag + "}"
}

// windowed reports whether a admits Rate per window, all at once, so that a
// burst means nothing to it. The library says so: it refuses such a limit
// with a burst other than its rate (New sends nothing to Redis).
func (s *server) windowed(a ratelimit.Algorithm) bool {
	_, err := ratelimit.New(s.rdb, "probe", ratelimit.PerSecond(2).WithBurst(3), ratelimit.WithAlgorithm(a))
	return err != nil
}

// algorithms lists every algorithm, GCRA first (the constants run from
// GCRA to SlidingWindowCounter).
func algorithms() []ratelimit.Algorithm {
	var as []ratelimit.Algorithm
	for a := ratelimit.GCRA; a <= ratelimit.SlidingWindowCounter; a++ {
		as = append(as, a)
	}
	return as
}

// algorithm reads an algorithm's name.
func algorithm(name string) (ratelimit.Algorithm, bool) {
	for _, a := range algorithms() {
		if a.String() == name {
			return a, true
		}
	}
	return 0, false
}

func wholeNumber(field, s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a whole number", field, s)
	}
	return n, nil
}

func badRequest(w http.ResponseWriter, err error) {
	httplimit.Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: err.Error()}.Write(w)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
