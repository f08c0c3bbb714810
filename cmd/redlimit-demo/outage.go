package main

// Redis down: one limit under each fallback, on a client the page
// can switch off (its commands then fail as a dead server's would), each
// behind the real middleware.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var outageLimit = ratelimit.Limit{Rate: 4, Period: 10 * time.Second, Burst: 4}

type policyLane struct {
	Name    string `json:"name"`
	About   string `json:"about"`
	handler http.Handler
	limiter *ratelimit.Limiter
}

type outage struct {
	mu     sync.Mutex
	client *scripter
	lanes  []*policyLane
}

func newOutage(s *server) (*outage, error) {
	o := &outage{client: &scripter{c: s.rdb}}
	prefix := fmt.Sprintf("demo:outage:%d:", time.Now().UnixNano())
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for i, p := range []struct {
		name, about string
		fallback    *ratelimit.Fallback
	}{
		{"no fallback", "the error reaches the middleware: 503", nil},
		{"FailOpen", "every request passes: availability over protection", &ratelimit.FailOpen},
		{"FailClosed", "every request is refused: protection over availability", &ratelimit.FailClosed},
		{"FailLocal(0.5)", "the insurance limiter: half the limit, in this process's memory", ptr(ratelimit.FailLocal(0.5))},
	} {
		opts := []ratelimit.Option{ratelimit.WithPrefix(fmt.Sprintf("%s%d:", prefix, i))}
		if p.fallback != nil {
			opts = append(opts, ratelimit.WithFallback(*p.fallback))
		}
		l, err := ratelimit.New(o.client, "outage", outageLimit, opts...)
		if err != nil {
			return nil, err
		}
		o.lanes = append(o.lanes, &policyLane{Name: p.name, About: p.about, limiter: l,
			handler: httplimit.Middleware(l, func(*http.Request) (string, error) { return "client", nil })(ok)})
	}
	return o, nil
}

func ptr[T any](v T) *T { return &v }

// An answer is what the middleware answered one request.
type answer struct {
	Status int    `json:"status"`
	Title  string `json:"title,omitempty"`
}

// ServeHTTP serves GET /api/outage (the switch's state), and POST
// /api/outage?down=1|0 (the switch), ?send=N (N requests through each
// policy's middleware, 1 to 20) and ?reset=1.
func (o *outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := r.URL.Query()
	answers := map[string][]answer{}
	switch {
	case r.Method == http.MethodGet: // the state, as it is
	case q.Get("down") != "":
		o.client.down.Store(q.Get("down") == "1")
	case q.Get("reset") != "":
		o.client.down.Store(false)
		for _, l := range o.lanes {
			if err := l.limiter.Reset(r.Context(), "client"); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
	default:
		n, err := wholeNumber("send", q.Get("send"))
		if err == nil && (n < 1 || n > 20) {
			err = fmt.Errorf("send: %d, want 1 to 20", n)
		}
		if err != nil {
			badRequest(w, err)
			return
		}
		for _, l := range o.lanes {
			for range n {
				rec := httptest.NewRecorder()
				l.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(r.Context()))
				a := answer{Status: rec.Code}
				if rec.Code != http.StatusOK {
					a.Title = rec.Header().Get("Content-Type")
					if p, err := problemOf(rec.Body.Bytes()); err == nil {
						a.Title = p.Title
					}
				}
				answers[l.Name] = append(answers[l.Name], a)
			}
		}
	}
	writeJSON(w, map[string]any{"down": o.client.down.Load(), "lanes": o.lanes, "answers": answers, "limit": limitJSON(outageLimit)})
}

func problemOf(body []byte) (httplimit.Problem, error) {
	var p httplimit.Problem
	err := json.Unmarshal(body, &p)
	return p, err
}
