package httplimit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// A Transport is an http.RoundTripper that sends a request only within a
// margin of its admission by a rule, so that a cap the receiver counts as
// requests arrive holds there (docs/http.md). It is safe for concurrent
// use.
type Transport struct {
	next   http.RoundTripper
	rule   ratelimit.Rule
	key    KeyFunc
	margin time.Duration
	turns  turns
}

// NewTransport returns a Transport that sends each request through next
// (http.DefaultTransport if nil) once rule admits it for key, at cost 1,
// and only within margin of that admission: one older than that when the
// connection is ready is not sent on, and the Transport decides again. For
// N in any window, make rule a SlidingWindowLog of N per window plus
// margin plus the way to the receiver. NewTransport panics on a nil rule
// or key, or a margin not above 0.
func NewTransport(next http.RoundTripper, rule ratelimit.Rule, key KeyFunc, margin time.Duration) *Transport {
	if rule == nil || key == nil || margin <= 0 {
		panic("httplimit: NewTransport needs a rule, a key function and a margin above 0")
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &Transport{next: next, rule: rule, key: key, margin: margin}
}

// RoundTrip sends req through next once admitted. When it cannot, it
// returns an error matching context.DeadlineExceeded when the wait would
// pass req's deadline, ratelimit.ErrInvalid when req can never pass, or
// the key function's or the rule's error. Each admission is a
// reservation (Rule.Reserve): one it does not send on is given back.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key, err := t.key(req)
	if err != nil {
		return nil, closeBody(req, err)
	}
	ctx := req.Context()
	a, err := t.admit(ctx, key)
	if err != nil {
		return nil, closeBody(req, err)
	}
	// The admission is checked again where the request is about to be
	// written, and one older than the margin is not sent on (send). The
	// hooks run with no lock of the transport held, so they may block.
	ctx, cancel := context.WithCancelCause(ctx)
	s := &send{t: t, ctx: req.Context(), key: key, a: a, cancel: cancel}
	trace := &httptrace.ClientTrace{GotConn: s.gotConn, WroteHeaderField: s.wroteHeaderField}
	resp, err := t.next.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	s.mu.Lock()
	refused := s.err
	s.mu.Unlock()
	if refused != nil {
		cancel(refused)
		if resp != nil {
			resp.Body.Close()
		}
		return nil, refused
	}
	if err != nil {
		cancel(err)
		return nil, err
	}
	// The context outlives RoundTrip: the body is read under it.
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// An admission is a request the rule admitted, at the instant just before
// the decision was asked for: the rule counted it after that instant.
type admission struct {
	at time.Time
	r  *ratelimit.Reservation
}

// drop lets an admission go unsent and gives it back. One whose Cancel
// fails stays counted, which only lowers the rate the receiver sees.
func (a admission) drop(ctx context.Context) { _ = a.r.Cancel(ctx) }

// stale reports whether a's request may no longer be sent.
func (t *Transport) stale(a admission) bool { return time.Since(a.at) > t.margin }

// admit waits until the rule admits a request for key, and returns an
// admission not older than the margin.
func (t *Transport) admit(ctx context.Context, key string) (admission, error) {
	// A first try outside the queue: most requests pass.
	a, wait, interval, err := t.try(ctx, key)
	if err != nil {
		return admission{}, err
	}
	if wait == 0 {
		if !t.stale(a) {
			return a, nil
		}
		a.drop(ctx)
	}
	// The wait runs from the denial, not from the turn: a waiter that
	// queued for longer asks at once. One waiter per key asks at a time,
	// the others in the order they came.
	due := time.Now().Add(wait)
	release, err := t.turns.enter(ctx, key)
	if err != nil {
		return admission{}, err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		if wait > 0 {
			d := max(time.Until(due), 0)
			d += jitter(d, interval, attempt)
			if deadline, ok := ctx.Deadline(); ok {
				d = min(d, time.Until(deadline))
			}
			timer := time.NewTimer(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return admission{}, context.Cause(ctx)
			case <-timer.C:
			}
		}
		if a, wait, interval, err = t.try(ctx, key); err != nil {
			return admission{}, err
		}
		if wait == 0 {
			if !t.stale(a) {
				return a, nil
			}
			// The decision came back later than the margin (a slow reply,
			// a descheduled caller): not sent on.
			a.drop(ctx)
		}
		due = time.Now().Add(wait)
	}
}

// try asks once: wait is 0 when a request passed, else the wait before the
// next try; interval is the limit's time per request.
func (t *Transport) try(ctx context.Context, key string) (a admission, wait, interval time.Duration, err error) {
	a.at = time.Now()
	r, err := t.rule.Reserve(ctx, key, 1)
	if err != nil {
		return a, 0, 0, err
	}
	d := r.Decision
	if d.Allowed {
		a.r = r
		return a, 0, 0, nil
	}
	_ = r.Cancel(ctx) // what All counted in its other rules
	switch {
	case d.RetryAfter == ratelimit.Never:
		return a, 0, 0, fmt.Errorf("%w: httplimit: a request can never pass %q (burst %d)", ratelimit.ErrInvalid, d.Name, d.Limit.Burst)
	case d.Cause != nil && d.RetryAfter <= 0:
		return a, 0, 0, fmt.Errorf("httplimit: %q fails closed: %w", d.Name, d.Cause)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d.RetryAfter {
		return a, 0, 0, fmt.Errorf("httplimit: the request would wait %v, past its context's deadline: %w", d.RetryAfter, context.DeadlineExceeded)
	}
	if d.Limit.Rate > 0 {
		interval = d.Limit.Period / time.Duration(d.Limit.Rate)
	}
	return a, d.RetryAfter, interval, nil
}

// jitter is a random extra wait for a waiter's attempt-th denial, as Wait
// adds, so the processes waiting on one key do not ask at one instant: up
// to an eighth of min(wait, interval), doubling per attempt, at most 4
// intervals.
func jitter(wait, interval time.Duration, attempt int) time.Duration {
	j := min(wait, interval) / 8
	for i := 0; i < attempt && j < 4*interval; i++ {
		j *= 2
	}
	j = min(j, 4*interval)
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}

// A send is one RoundTrip's admission, checked where the transport below
// is about to write the request.
type send struct {
	t      *Transport
	ctx    context.Context // the request's own
	key    string
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	a     admission
	conn  net.Conn // the connection the request is about to go out on
	conns int      // how many the transport obtained
	host  bool     // HTTP/1 wrote the Host line on conn
	err   error    // the admission could not be renewed: nothing may be sent
}

// gotConn checks the admission once a connection is obtained (after any
// dial). A transport that retries a request on a new connection calls it
// again: the first attempt may have gone out, so the retry takes an
// admission of its own.
func (s *send) gotConn(info httptrace.GotConnInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn, s.host = info.Conn, false
	switch s.conns++; {
	case s.err != nil:
		s.refuse()
	case s.conns > 1:
		s.renew()
	default:
		s.check()
	}
}

// wroteHeaderField checks the admission again on HTTP/1's writing
// goroutine, right after the Host line is buffered and before anything
// is flushed: the hand-off to that goroutine may have been slow. (HTTP/2
// writes its fields under a lock of the shared connection: not there.)
func (s *send) wroteHeaderField(name string, _ []string) {
	if name != "Host" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host {
		return
	}
	s.host = true
	if s.err != nil {
		s.refuse()
		return
	}
	s.check()
}

// check renews a stale admission; s.mu is held.
func (s *send) check() {
	if s.t.stale(s.a) {
		s.a.drop(s.ctx)
		s.renew()
	}
}

// renew takes a new admission, blocking the transport's write meanwhile;
// s.mu is held.
func (s *send) renew() {
	if s.a, s.err = s.t.admit(s.ctx, s.key); s.err != nil {
		s.refuse()
	}
}

// refuse stops the write when there is no admission; s.mu is held.
// Canceling stops HTTP/2 before its headers and HTTP/1 from retrying;
// HTTP/1 writes on a goroutine of its own whatever the context, so its
// connection, the request's own, is closed.
func (s *send) refuse() {
	s.cancel(s.err)
	if s.conn == nil { // a RoundTripper that reports no connection
		return
	}
	if c, ok := s.conn.(interface{ ConnectionState() tls.ConnectionState }); !ok || c.ConnectionState().NegotiatedProtocol != "h2" {
		s.conn.Close()
	}
}

// cancelBody ends a response's context once its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(errBodyClosed)
	return err
}

var errBodyClosed = errors.New("httplimit: response body closed")

// closeBody closes req's body, as a RoundTripper must even when it fails,
// and returns err.
func closeBody(req *http.Request, err error) error {
	if req.Body != nil {
		req.Body.Close()
	}
	return err
}

// turns lets one waiter per key at a time ask the rule; the others wait
// their turn in the order they came (a channel's receivers are served in
// order).
type turns struct {
	mu    sync.Mutex
	slots map[string]*turn
}

type turn struct {
	c    chan struct{} // holds a token while nobody has the turn
	refs int
}

// enter waits for key's turn and returns its release.
func (q *turns) enter(ctx context.Context, key string) (release func(), err error) {
	q.mu.Lock()
	if q.slots == nil {
		q.slots = map[string]*turn{}
	}
	s := q.slots[key]
	if s == nil {
		s = &turn{c: make(chan struct{}, 1)}
		s.c <- struct{}{}
		q.slots[key] = s
	}
	s.refs++
	q.mu.Unlock()
	leave := func() {
		q.mu.Lock()
		if s.refs--; s.refs == 0 {
			delete(q.slots, key) // no entry outlives its last waiter
		}
		q.mu.Unlock()
	}
	select {
	case <-s.c:
		return func() { s.c <- struct{}{}; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, context.Cause(ctx)
	}
}
