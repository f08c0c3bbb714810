package ratelimit

import (
	"errors"
	"net/http"
	"time"
)

// Middleware limits an http.Handler: for each request, rule says which
// limiters apply and key says who the request counts against (checked as
// AllowAll does, or atomically when the rule is, or a tier picks, a
// *Multi). It works
// with the standard mux and any router that takes func(http.Handler)
// http.Handler. For per-route limits, wrap each route's handler with its
// own limiter (see the examples).
//
// A request that passes goes on to the handler. One that is denied gets a
// 429 (or a 503 when only a failure policy denied it, Redis being out of
// reach) with an RFC 9457 problem body that WithDenied replaces. Both carry
// the RateLimit-Policy and RateLimit fields of the IETF draft, the usual
// X-RateLimit-Limit, -Remaining and -Reset, and, on a denial, Retry-After
// in whole seconds rounded up (SetHeaders has the precise rules). A request
// the key function cannot key (ErrNoKey, ErrClientIP) gets a 400, an
// unknown tier a 500, and a limiter error without a failure policy a 503;
// WithErrorHandler replaces them.
//
// The middleware only turns decisions into HTTP: all the limiting is the
// limiters'.
func Middleware(rule Rule, key KeyFunc, opts ...HTTPOption) func(http.Handler) http.Handler {
	m := &middleware{rule: rule, key: key, denied: writeDenied, fail: writeError, now: time.Now}
	for _, o := range opts {
		o(m)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}
}

// An HTTPOption configures Middleware.
type HTTPOption func(*middleware)

// WithCost sets what a request costs; 1 by default. A cost below 1 or
// above 1e9 is refused with ErrInvalidCost, which the default error
// handler answers with a 500: the cost function is wrong, not the request
// (check what a client sends before it becomes a cost).
func WithCost(cost func(r *http.Request) int64) HTTPOption {
	return func(m *middleware) { m.cost = cost }
}

// WithDenied replaces what a denied request gets. The rate-limit headers
// are already set; denied writes the status and the body. The default
// writes ProblemFor(v).
func WithDenied(denied func(w http.ResponseWriter, r *http.Request, v Verdict)) HTTPOption {
	return func(m *middleware) { m.denied = denied }
}

// WithErrorHandler replaces what a request gets when it cannot be decided:
// the rule or the key function failed, or a limiter returned an error (no
// failure policy). The default writes a problem: 400 for ErrNoKey and
// ErrClientIP (with the reason), 500 for ErrUnknownTier and ErrInvalidCost
// (a WithCost out of range), 503 otherwise (without details, which could
// expose the store).
func WithErrorHandler(fail func(w http.ResponseWriter, r *http.Request, err error)) HTTPOption {
	return func(m *middleware) { m.fail = fail }
}

type middleware struct {
	rule   Rule
	key    KeyFunc
	cost   func(*http.Request) int64
	denied func(http.ResponseWriter, *http.Request, Verdict)
	fail   func(http.ResponseWriter, *http.Request, error)
	now    func() time.Time
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	limiters, check, err := checkerFor(r, m.rule)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	key, err := m.key(r)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	n := int64(1)
	if m.cost != nil {
		n = m.cost(r)
	}
	ds, err := check(r.Context(), key, n)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	v := Verdict{Key: key, Limiters: limiters, Decisions: ds}
	writeHeaders(w.Header(), v, m.now())
	if !v.Allowed() {
		m.denied(w, r, v)
		return
	}
	next.ServeHTTP(w, r)
}

func writeDenied(w http.ResponseWriter, _ *http.Request, v Verdict) { ProblemFor(v).Write(w) }

func writeError(w http.ResponseWriter, _ *http.Request, err error) {
	p := Problem{Type: "about:blank", Status: http.StatusServiceUnavailable}
	switch {
	case errors.Is(err, ErrNoKey), errors.Is(err, ErrClientIP):
		p.Status, p.Detail = http.StatusBadRequest, err.Error()
	case errors.Is(err, ErrUnknownTier), errors.Is(err, ErrInvalidCost):
		// The server's configuration or code is wrong, not its store.
		p.Status = http.StatusInternalServerError
	}
	p.Title = http.StatusText(p.Status)
	p.Write(w)
}

// A Verdict is what the limiters of a Rule decided for one request.
type Verdict struct {
	Key       string     // what the KeyFunc returned
	Limiters  []*Limiter // what the Rule returned
	Decisions []Decision // one per limiter
}

// Allowed reports whether every limiter allowed the request.
func (v Verdict) Allowed() bool {
	for _, d := range v.Decisions {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// RetryAfter is the longest RetryAfter among the denials made by Redis:
// Never when one of them can never pass, 0 when there are none.
func (v Verdict) RetryAfter() time.Duration {
	var longest time.Duration
	for _, d := range v.Decisions {
		if !d.Allowed && d.Fallback == NoFallback && d.RetryAfter > longest {
			longest = d.RetryAfter
		}
	}
	return longest
}

// Violated names the limiters that denied the request.
func (v Verdict) Violated() []string {
	var names []string
	for i, d := range v.Decisions {
		if !d.Allowed {
			names = append(names, v.Limiters[i].name)
		}
	}
	return names
}

// FailedClosed reports whether the request was denied only by failure
// policies (FailClosed): Redis could not be asked, no limit was exceeded.
func (v Verdict) FailedClosed() bool {
	closed := false
	for _, d := range v.Decisions {
		if d.Allowed {
			continue
		}
		if d.Fallback != FailClosed {
			return false
		}
		closed = true
	}
	return closed
}
