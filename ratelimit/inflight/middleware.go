package inflight

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// Middleware caps the requests in flight per key: a request takes a lease,
// which is renewed while the handler runs and released when it returns,
// panics, or its client hangs up. A request over the cap gets a 429 with
// Retry-After: 1 and a problem body (WithDenied); FailClosed answers 503.
// A request that cannot be decided goes to the error handler
// (WithErrorHandler). Middleware panics on a nil limiter or key.
func Middleware(l *Limiter, key httplimit.KeyFunc, opts ...MiddlewareOption) func(http.Handler) http.Handler {
	if l == nil || key == nil {
		panic("inflight: Middleware needs a limiter and a key function")
	}
	m := &middleware{l: l, key: key, denied: writeDenied, fail: httplimit.WriteError}
	for _, o := range opts {
		o(m)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}
}

// A MiddlewareOption configures Middleware. The options are named as
// httplimit's.
type MiddlewareOption func(*middleware)

// WithDenied replaces what a request over the cap gets: denied writes the
// status, headers and body for d, the limiter's Decision.
func WithDenied(denied func(w http.ResponseWriter, r *http.Request, d Decision)) MiddlewareOption {
	return func(m *middleware) { m.denied = denied }
}

// WithErrorHandler replaces what a request gets when it cannot be decided:
// the key function or the limiter failed.
func WithErrorHandler(fail func(w http.ResponseWriter, r *http.Request, err error)) MiddlewareOption {
	return func(m *middleware) { m.fail = fail }
}

type middleware struct {
	l      *Limiter
	key    httplimit.KeyFunc
	denied func(http.ResponseWriter, *http.Request, Decision)
	fail   func(http.ResponseWriter, *http.Request, error)
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key, err := m.key(r)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	lease, d, err := m.l.Acquire(r.Context(), key)
	if err != nil {
		m.fail(w, r, err)
		return
	}
	if !d.Allowed {
		m.denied(w, r, d)
		return
	}
	// Deferred, so a panicking handler releases too; the release outlives
	// the request's context, which ends when the client hangs up.
	stop := lease.KeepAlive(r.Context())
	defer func() {
		stop()
		ctx := context.WithoutCancel(r.Context())
		if m.l.timeout <= 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
		}
		_ = lease.Release(ctx)
	}()
	next.ServeHTTP(w, r)
}

// writeDenied is the default answer over the cap: 429, or, when only the
// fallback denied, 503; both with Retry-After: 1.
func writeDenied(w http.ResponseWriter, _ *http.Request, d Decision) {
	w.Header().Set("Retry-After", strconv.Itoa(1))
	if d.Fallback == ratelimit.FailClosed {
		httplimit.Problem{
			Type:   "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
			Title:  "Request cannot be satisfied due to temporary server capacity constraints",
			Status: http.StatusServiceUnavailable,
			Detail: "The concurrency limiter cannot reach its store and fails closed.",
		}.Write(w)
		return
	}
	httplimit.Problem{
		Type:   "about:blank",
		Title:  http.StatusText(http.StatusTooManyRequests),
		Status: http.StatusTooManyRequests,
		Detail: "Too many requests in flight: " + strconv.FormatInt(d.Limit, 10) + " at most. Retry when one has finished.",
	}.Write(w)
}
