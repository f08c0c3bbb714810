package inflight

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// Middleware caps the requests in flight: a request whose key holds fewer
// than the limiter's Limit leases takes one, runs the handler while
// renewing it (Lease.KeepAlive, so a long request keeps its slot), and
// releases it when the handler returns, also when the handler panics and
// when the client hangs up (the release does not use the request's
// context, which a hang-up cancels). A lease whose release fails expires
// with its TTL.
//
// A request over the cap gets a 429 with Retry-After: 1 and an RFC 9457
// problem body (WithDenied replaces it). 429, because the key says who has
// too many requests in flight, as Kubernetes' API server answers its
// max-in-flight limit; a cap shared by every client (a constant key) is
// server capacity, for which WithDenied can answer 503. Retry-After is 1
// second because a slot frees when any holder finishes, usually sooner than
// anything the limiter can promise. No RateLimit header fields are sent:
// they describe quotas over time windows, and a cap in flight has none.
//
// When Redis fails, the limiter's failure policy decides: FailOpen serves
// the request without a lease, FailClosed answers 503 with the draft's
// "temporary-reduced-capacity" problem, FailLocal caps it in this process.
// Without a policy, and when the key function fails, the error handler
// answers (WithErrorHandler; httplimit.WriteError by default).
// Middleware panics on a nil limiter or key.
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
// status, headers and body; d is the limiter's Decision (or the failure
// policy's, FailClosed, when Redis could not be asked).
func WithDenied(denied func(w http.ResponseWriter, r *http.Request, d Decision)) MiddlewareOption {
	return func(m *middleware) { m.denied = denied }
}

// WithErrorHandler replaces what a request gets when it cannot be decided:
// the key function or the limiter failed (no failure policy).
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

// writeDenied is the default answer over the cap: 429 and Retry-After: 1,
// or, when only the failure policy denied, 503.
func writeDenied(w http.ResponseWriter, _ *http.Request, d Decision) {
	if d.Fallback == ratelimit.FailClosed {
		httplimit.Problem{
			Type:   "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
			Title:  "Request cannot be satisfied due to temporary server capacity constraints",
			Status: http.StatusServiceUnavailable,
			Detail: "The concurrency limiter cannot reach its store and fails closed.",
		}.Write(w)
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(1))
	httplimit.Problem{
		Type:   "about:blank",
		Title:  http.StatusText(http.StatusTooManyRequests),
		Status: http.StatusTooManyRequests,
		Detail: "Too many requests in flight: " + strconv.FormatInt(d.Limit, 10) + " at most. Retry when one has finished.",
	}.Write(w)
}
