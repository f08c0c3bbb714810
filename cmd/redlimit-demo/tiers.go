package main

// A tier switch: alice's API key on the free plan or the pro one, chosen
// per request by ratelimit.Select, both plans on one state (WithLimit), so
// an upgrade lets through what the new limit allows at once, with no
// fresh bucket and no lost count; an unknown key is refused by the rule
// itself, never given a bucket of its own.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var (
	tierFree = ratelimit.Limit{Rate: 3, Period: 10 * time.Second, Burst: 3}
	tierPro  = ratelimit.Limit{Rate: 10, Period: 10 * time.Second, Burst: 10}
)

var errUnknownKey = errors.New("unknown API key")

type tiers struct {
	mu      sync.Mutex
	plan    string // alice's: free or pro
	handler http.Handler
	free    *ratelimit.Limiter
}

func newTiers(s *server) (*tiers, error) {
	free, err := ratelimit.New(s.rdb, "plan", tierFree, ratelimit.WithPrefix(fmt.Sprintf("demo:plan:%d:", time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	pro, err := free.WithLimit(tierPro)
	if err != nil {
		return nil, err
	}
	t := &tiers{plan: "free", free: free}
	rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
		if key != "alice-key" {
			return nil, fmt.Errorf("%w %q", errUnknownKey, key)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.plan == "pro" {
			return pro, nil
		}
		return free, nil
	})
	byKey := func(r *http.Request) (string, error) { return r.URL.Query().Get("key"), nil }
	refuse := httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, errUnknownKey) {
			httplimit.Problem{Type: "about:blank", Title: "Unauthorized", Status: http.StatusUnauthorized,
				Detail: err.Error() + ": refused by the rule, counted against nobody"}.Write(w)
			return
		}
		httplimit.WriteError(w, r, err)
	})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{"ok": true}) })
	t.handler = httplimit.Middleware(rule, byKey, refuse)(ok)
	return t, nil
}

// tier serves GET /api/tier?key=K (a request through the middleware),
// POST /api/tier?plan=free|pro (alice's plan changes) and POST
// /api/tier?reset=1.
func (t *tiers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		t.handler.ServeHTTP(w, r)
		return
	}
	q := r.URL.Query()
	switch {
	case q.Get("reset") != "":
		if err := t.free.Reset(r.Context(), "alice-key"); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	case q.Get("plan") == "free" || q.Get("plan") == "pro":
		t.mu.Lock()
		t.plan = q.Get("plan")
		t.mu.Unlock()
	default:
		badRequest(w, fmt.Errorf("plan: %q, want free or pro", q.Get("plan")))
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	writeJSON(w, map[string]any{"plan": t.plan, "free": limitJSON(tierFree), "pro": limitJSON(tierPro)})
}
