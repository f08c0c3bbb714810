// Package httplimit limits net/http handlers with any ratelimit.Rule, and
// writes the IETF RateLimit header fields and RFC 9457 problem bodies.
//
//	limit := httplimit.Middleware(limiter, httplimit.ByClientIP())
//	log.Fatal(http.ListenAndServe(":8080", limit(mux)))
//
// The middleware only maps a Decision to HTTP; SetHeaders and ProblemFor
// do the same for a response written by other means.
package httplimit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/clientip"
)

// Middleware limits an http.Handler: key says who a request counts against
// and rule decides. A request that passes goes on; one that is denied gets
// a 429 (a 503 when only a fallback failing closed denied it) with a
// problem body (WithDenied). Both carry the rate-limit fields (SetHeaders).
// A request that cannot be decided goes to the error handler
// (WithErrorHandler; WriteError by default). Middleware panics on a nil
// rule or key.
func Middleware(rule ratelimit.Rule, key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	if rule == nil || key == nil {
		panic("httplimit: Middleware needs a rule and a key function")
	}
	m := &middleware{rule: rule, key: key, denied: writeDenied, fail: WriteError, now: time.Now}
	for _, o := range opts {
		o(m)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}
}

// An Option configures Middleware.
type Option func(*middleware)

// WithCost sets what a request costs; 1 by default. A cost out of 1 to 1e9
// is ratelimit.ErrInvalid, which WriteError answers with a 500.
func WithCost(cost func(r *http.Request) int64) Option {
	return func(m *middleware) { m.cost = cost }
}

// WithDenied replaces what a denied request gets. The rate-limit headers
// are already set; denied writes the status and the body. The default
// writes ProblemFor(d).
func WithDenied(denied func(w http.ResponseWriter, r *http.Request, d ratelimit.Decision)) Option {
	return func(m *middleware) { m.denied = denied }
}

// WithErrorHandler replaces what a request gets when it cannot be decided:
// the key function or the rule failed (see Middleware for the default).
func WithErrorHandler(fail func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(m *middleware) { m.fail = fail }
}

// WithSkip lets the requests for which skip is true through unlimited and
// with no rate-limit header fields: health checks, an allowlist.
func WithSkip(skip func(r *http.Request) bool) Option {
	return func(m *middleware) { m.skip = skip }
}

// WithCountIf counts a request only when count is true of the status its
// handler answers, such as 401 for failed logins. Before the handler the
// rule reserves the request (Rule.Reserve), so requests that come together
// cannot pass a used-up limit; one that does not count is given back
// (Cancel) once its status is known. An error from Reserve goes to the
// error handler (docs/http.md).
func WithCountIf(count func(status int) bool) Option {
	return func(m *middleware) { m.countIf = count }
}

type middleware struct {
	rule    ratelimit.Rule
	key     KeyFunc
	cost    func(*http.Request) int64
	denied  func(http.ResponseWriter, *http.Request, ratelimit.Decision)
	fail    func(http.ResponseWriter, *http.Request, error)
	skip    func(*http.Request) bool
	countIf func(int) bool
	now     func() time.Time
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.skip != nil && m.skip(r) {
		next.ServeHTTP(w, r)
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
	if m.countIf != nil {
		m.serveReserved(w, r, next, key, n)
		return
	}
	d, err := m.rule.AllowN(r.Context(), key, n)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	writeHeaders(w.Header(), d, m.now())
	if !d.Allowed {
		m.denied(w, r, d)
		return
	}
	next.ServeHTTP(w, r)
}

// serveReserved is WithCountIf by a reservation: counted before the
// handler, so that at most the limit's requests reach it, and given back
// when its status does not count.
func (m *middleware) serveReserved(w http.ResponseWriter, r *http.Request, next http.Handler, key string, n int64) {
	res, err := m.rule.Reserve(r.Context(), key, n)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	giveBack := func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		return res.Cancel(ctx) // a failed give-back leaves the request counted, the safe side
	}
	d := res.Decision
	writeHeaders(w.Header(), d, m.now())
	if !d.Allowed {
		_ = giveBack() // what All counted in its other rules: a denial counts nothing
		m.denied(w, r, d)
		return
	}
	sw := &statusWriter{ResponseWriter: w, commit: func(status int) {
		if !m.countIf(status) && giveBack() == nil {
			clearHeaders(w.Header())
			writeHeaders(w.Header(), givenBack(d, n), m.now())
		}
	}}
	defer sw.settle(http.StatusOK)
	next.ServeHTTP(sw, r)
}

// givenBack is d once the n it counted are given back: each limit that
// counted has n more left, up to its burst. (Its reset is left as counted:
// later, never earlier, than the key's.)
func givenBack(d ratelimit.Decision, n int64) ratelimit.Decision {
	back := func(p ratelimit.Decision) ratelimit.Decision {
		if p.Allowed && p.Cause == nil {
			p.Remaining = min(p.Remaining+n, max(p.Limit.Burst, p.Remaining))
		}
		return p
	}
	d = back(d)
	if len(d.Parts) > 0 {
		parts := make([]ratelimit.Decision, len(d.Parts))
		for i, p := range d.Parts {
			parts[i] = back(p)
		}
		d.Parts = parts
	}
	return d
}

// statusWriter hands the final status a handler answers to commit, once,
// before it passes it on.
type statusWriter struct {
	http.ResponseWriter
	status int
	commit func(status int)
}

func (w *statusWriter) settle(status int) {
	if w.status == 0 {
		w.status = status
		w.commit(status)
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if code >= 200 { // not an informational 1xx
		w.settle(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.settle(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush, Hijack
// and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeDenied(w http.ResponseWriter, _ *http.Request, d ratelimit.Decision) {
	ProblemFor(d).Write(w)
}

// WriteError is the default error handler: a problem with status 400 for a
// request without a key (ErrNoKey, clientip.ErrNoAddr), 503 with
// Retry-After when Redis is unavailable or the request's context ended, and
// 500 otherwise, saying why only for a bad configuration (ErrNoRoute,
// ratelimit.ErrInvalid).
func WriteError(w http.ResponseWriter, _ *http.Request, err error) {
	p := Problem{Type: "about:blank", Status: http.StatusInternalServerError}
	switch {
	case errors.Is(err, ErrNoKey), errors.Is(err, clientip.ErrNoAddr):
		p.Status, p.Detail = http.StatusBadRequest, err.Error()
	case errors.Is(err, ratelimit.ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Redis failed, or the request's context ended while it decided.
		p.Status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", closedRetryAfter)
	case errors.Is(err, ErrNoRoute), errors.Is(err, ratelimit.ErrInvalid):
		// The server's configuration or code is wrong: say how, loudly.
		p.Detail = err.Error()
	}
	p.Title = http.StatusText(p.Status)
	p.Write(w)
}
