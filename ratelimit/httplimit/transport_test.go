package httplimit_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// scriptedRule answers the i-th Reserve with answer(i) (from 0), after
// sleeping as long as it says, and records when each was asked. Its
// reservations hold nothing in Redis.
type scriptedRule struct {
	answer func(i int) (d ratelimit.Decision, sleep time.Duration, err error)
	mu     sync.Mutex
	asked  []time.Time
}

func (r *scriptedRule) Allow(context.Context, string) (ratelimit.Decision, error) {
	panic("the transport only reserves")
}

func (r *scriptedRule) AllowN(context.Context, string, int64) (ratelimit.Decision, error) {
	panic("the transport only reserves")
}

func (r *scriptedRule) Peek(context.Context, string) (ratelimit.Decision, error) {
	panic("the transport only reserves")
}

func (r *scriptedRule) Reserve(ctx context.Context, key string, n int64) (*ratelimit.Reservation, error) {
	r.mu.Lock()
	i := len(r.asked)
	r.asked = append(r.asked, time.Now())
	r.mu.Unlock()
	d, sleep, err := r.answer(i)
	time.Sleep(sleep)
	if err != nil {
		return nil, err
	}
	return &ratelimit.Reservation{Decision: d}, nil
}

func (r *scriptedRule) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.asked...)
}

var (
	allowed = ratelimit.Decision{Allowed: true, Name: "partner", Limit: ratelimit.PerSecond(10)}
	errDown = errors.New("redis is down")
)

func denied(retry time.Duration) ratelimit.Decision {
	return ratelimit.Decision{Name: "partner", Limit: ratelimit.PerSecond(10), RetryAfter: retry}
}

func always(d ratelimit.Decision) func(int) (ratelimit.Decision, time.Duration, error) {
	return func(int) (ratelimit.Decision, time.Duration, error) { return d, 0, nil }
}

// partnerServer counts the requests that reach it, and when.
type partnerServer struct {
	*httptest.Server
	mu      sync.Mutex
	arrived []time.Time
}

func newPartner(t *testing.T) *partnerServer {
	p := &partnerServer{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.arrived = append(p.arrived, time.Now())
		p.mu.Unlock()
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *partnerServer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.arrived)
}

func constKey(*http.Request) (string, error) { return "partner", nil }

const margin = 20 * time.Millisecond

// slowDial is a transport whose dials take d; *dialed is when the last
// one ended.
func slowDial(d time.Duration, dialed *atomic.Int64) *http.Transport {
	next := http.DefaultTransport.(*http.Transport).Clone()
	dial := (&net.Dialer{}).DialContext
	next.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(d)
		c, err := dial(ctx, network, addr)
		dialed.Store(time.Now().UnixNano())
		return c, err
	}
	return next
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (b *closeRecorder) Close() error { b.closed.Store(true); return nil }

func roundTrip(t *testing.T, rt http.RoundTripper, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestTransportSendsOnAFreshAdmission(t *testing.T) {
	p := newPartner(t)
	rule := &scriptedRule{answer: always(allowed)}
	rt := httplimit.NewTransport(nil, rule, constKey, margin)
	for i := 0; i < 3; i++ {
		if _, err := roundTrip(t, rt, ctx, p.URL); err != nil {
			t.Fatal(err)
		}
	}
	// A loaded machine may make an admission stale, and add a decision.
	if got, asked := p.count(), len(rule.times()); got != 3 || asked < 3 {
		t.Errorf("%d requests reached the partner on %d decisions, want 3 on 3 or more", got, asked)
	}
}

// A dial that takes longer than the margin would make the admission stale
// before the request is written: the transport decides again once it has
// the connection, and the request goes out on that decision.
func TestTransportDecidesAgainAfterASlowDial(t *testing.T) {
	p := newPartner(t)
	rule := &scriptedRule{answer: always(allowed)}
	var dialed atomic.Int64
	rt := httplimit.NewTransport(slowDial(3*margin, &dialed), rule, constKey, margin)
	if _, err := roundTrip(t, rt, ctx, p.URL); err != nil {
		t.Fatal(err)
	}
	checkDecidedAfter(t, rule, p, time.Unix(0, dialed.Load()), "the dial ended")
}

// checkDecidedAfter checks that the one request at p went out on a
// decision asked for after instant (a loaded machine may add decisions).
func checkDecidedAfter(t *testing.T, rule *scriptedRule, p *partnerServer, instant time.Time, what string) {
	t.Helper()
	asked := rule.times()
	if len(asked) < 2 || p.count() != 1 {
		t.Fatalf("%d decisions and %d requests at the partner, want 2 or more and 1", len(asked), p.count())
	}
	if last := asked[len(asked)-1]; last.Before(instant) {
		t.Errorf("the last decision was asked for %v before %s: the request went out on a stale admission", instant.Sub(last), what)
	}
}

// A decision whose reply comes back later than the margin is not sent on.
func TestTransportDropsADecisionThatCameBackLate(t *testing.T) {
	p := newPartner(t)
	rule := &scriptedRule{answer: func(i int) (ratelimit.Decision, time.Duration, error) {
		if i == 0 {
			return allowed, 3 * margin, nil
		}
		return allowed, 0, nil
	}}
	rt := httplimit.NewTransport(nil, rule, constKey, margin)
	if _, err := roundTrip(t, rt, ctx, p.URL); err != nil {
		t.Fatal(err)
	}
	checkDecidedAfter(t, rule, p, rule.times()[0].Add(3*margin), "the first reply came")
}

// HTTP/1 writes on a goroutine of its own: when the hand-off to it is slow
// (here a GotConn hook of the caller's, which runs after the transport's),
// the admission is checked again there, before anything is flushed.
func TestTransportChecksAgainWhereHTTP1Writes(t *testing.T) {
	p := newPartner(t)
	rule := &scriptedRule{answer: always(allowed)}
	rt := httplimit.NewTransport(nil, rule, constKey, margin)
	var slept time.Time
	slow := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { time.Sleep(3 * margin); slept = time.Now() },
	})
	if _, err := roundTrip(t, rt, slow, p.URL); err != nil {
		t.Fatal(err)
	}
	checkDecidedAfter(t, rule, p, slept, "the hand-off to the writer ended")
}

// When the new decision fails after the connection was obtained, nothing
// is written: the partner sees no request.
func TestTransportSendsNothingWhenTheNewDecisionFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(i int) (ratelimit.Decision, time.Duration, error)
		want   error
	}{
		{"error", func(i int) (ratelimit.Decision, time.Duration, error) {
			if i == 0 {
				return allowed, 0, nil
			}
			return ratelimit.Decision{}, 0, errDown
		}, errDown},
		{"deadline", func(i int) (ratelimit.Decision, time.Duration, error) {
			if i == 0 {
				return allowed, 0, nil
			}
			return denied(time.Hour), 0, nil
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartner(t)
			rule := &scriptedRule{answer: tc.answer}
			var dialed atomic.Int64
			rt := httplimit.NewTransport(slowDial(3*margin, &dialed), rule, constKey, margin)
			c, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if _, err := roundTrip(t, rt, c, p.URL); !errors.Is(err, tc.want) {
				t.Fatalf("RoundTrip returned %v, want %v", err, tc.want)
			}
			// The partner's handler would have run by the time a request
			// written on loopback got its answer; RoundTrip returned on the
			// write's failure, so ask the partner once more to be sure.
			if _, err := http.Get(p.URL); err != nil {
				t.Fatal(err)
			}
			if got := p.count(); got != 1 {
				t.Errorf("%d requests reached the partner, want only the check's own", got)
			}
		})
	}
}

func TestTransportWaitsRetryAfter(t *testing.T) {
	p := newPartner(t)
	rule := &scriptedRule{answer: func(i int) (ratelimit.Decision, time.Duration, error) {
		if i == 0 {
			return denied(50 * time.Millisecond), 0, nil
		}
		return allowed, 0, nil
	}}
	rt := httplimit.NewTransport(nil, rule, constKey, margin)
	if _, err := roundTrip(t, rt, ctx, p.URL); err != nil {
		t.Fatal(err)
	}
	asked := rule.times()
	if len(asked) < 2 || p.count() != 1 {
		t.Fatalf("%d decisions and %d requests at the partner, want 2 or more and 1", len(asked), p.count())
	}
	if gap := asked[1].Sub(asked[0]); gap < 50*time.Millisecond {
		t.Errorf("asked again %v after a denial with RetryAfter 50ms", gap)
	}
}

// A request the transport does not send fails at once, closes its body,
// and reaches nobody.
func TestTransportRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule ratelimit.Rule
		key  httplimit.KeyFunc
		want error
	}{
		{"key", &scriptedRule{answer: always(allowed)}, func(*http.Request) (string, error) { return "", httplimit.ErrNoKey }, httplimit.ErrNoKey},
		{"rule", &scriptedRule{answer: func(int) (ratelimit.Decision, time.Duration, error) { return ratelimit.Decision{}, 0, errDown }}, constKey, errDown},
		{"never", &scriptedRule{answer: always(denied(ratelimit.Never))}, constKey, ratelimit.ErrInvalid},
		{"past the deadline", &scriptedRule{answer: always(denied(time.Hour))}, constKey, context.DeadlineExceeded},
		{"fails closed", &scriptedRule{answer: always(ratelimit.Decision{Name: "partner", Fallback: ratelimit.FailClosed, Cause: ratelimit.ErrUnavailable})}, constKey, ratelimit.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartner(t)
			rt := httplimit.NewTransport(nil, tc.rule, tc.key, margin)
			c, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			body := &closeRecorder{Reader: strings.NewReader("x")}
			req, _ := http.NewRequestWithContext(c, "POST", p.URL, body)
			start := time.Now()
			_, err := rt.RoundTrip(req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("RoundTrip returned %v, want %v", err, tc.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("RoundTrip took %v to refuse", took)
			}
			if !body.closed.Load() {
				t.Error("the request's body was not closed")
			}
			if p.count() != 0 {
				t.Errorf("%d requests reached the partner", p.count())
			}
		})
	}
}

func TestNewTransportPanicsOnBadArguments(t *testing.T) {
	rule := &scriptedRule{answer: always(allowed)}
	for name, f := range map[string]func(){
		"nil rule":    func() { httplimit.NewTransport(nil, nil, constKey, margin) },
		"nil key":     func() { httplimit.NewTransport(nil, rule, nil, margin) },
		"zero margin": func() { httplimit.NewTransport(nil, rule, constKey, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// Over HTTP/2 the check is the one at GotConn (its fields are written
// under a lock of the shared connection): a stale admission is decided
// again there, and a renewal that fails writes nothing, by the context
// alone, leaving the shared connection to the others.
func TestTransportOverHTTP2(t *testing.T) {
	var mu sync.Mutex
	var protos []int
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.ProtoMajor)
		mu.Unlock()
	}))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	next := h2.Client().Transport.(*http.Transport)
	var dialed atomic.Int64
	dial := (&net.Dialer{}).DialContext
	next.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(3 * margin)
		c, err := dial(ctx, network, addr)
		dialed.Store(time.Now().UnixNano())
		return c, err
	}
	var failFrom atomic.Int64 // the decisions from this one on fail
	failFrom.Store(math.MaxInt64)
	rule := &scriptedRule{answer: func(i int) (ratelimit.Decision, time.Duration, error) {
		if int64(i) >= failFrom.Load() {
			return ratelimit.Decision{}, 0, errDown
		}
		return allowed, 0, nil
	}}
	rt := httplimit.NewTransport(next, rule, constKey, margin)
	resp, err := roundTrip(t, rt, ctx, h2.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("the request went out over HTTP/%d", resp.ProtoMajor)
	}
	asked := rule.times()
	if last := asked[len(asked)-1]; last.Before(time.Unix(0, dialed.Load())) {
		t.Errorf("the last decision was asked for before the dial ended: the request went out on a stale admission")
	}

	// A RoundTripper in between that stalls makes the next admission
	// stale at GotConn, on the connection already up; its renewal fails.
	failFrom.Store(int64(len(rule.times())) + 1)
	stall := httplimit.NewTransport(roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		time.Sleep(3 * margin)
		return next.RoundTrip(r)
	}), rule, constKey, margin)
	if _, err := roundTrip(t, stall, ctx, h2.URL); !errors.Is(err, errDown) {
		t.Fatalf("RoundTrip returned %v, want %v", err, errDown)
	}
	if asked := len(rule.times()); int64(asked) <= failFrom.Load() {
		t.Fatalf("%d decisions: the stale admission was not decided again", asked)
	}
	failFrom.Store(math.MaxInt64)
	var reused bool
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	if _, err := roundTrip(t, rt, traced, h2.URL); err != nil {
		t.Fatal(err)
	}
	if !reused {
		t.Error("the refused request closed the shared connection")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(protos) != 2 {
		t.Errorf("%d requests reached the server, want 2: the refused one must write nothing", len(protos))
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An admission that goes stale before its request is written is given
// back, by every algorithm and a lockout: however many went stale, the
// limiter counts the one request that reached the partner.
func TestTransportGivesBackAStaleAdmission(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"gcra", nil},
		{"token-bucket", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.TokenBucket)}},
		{"sliding-log", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog)}},
		{"fixed-window", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.FixedWindow)}},
		{"lockout", []ratelimit.Option{ratelimit.WithLockout(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrozen(t) // Redis's TIME stands still: nothing refills
			// The windows reserve on this process's clock: the server's.
			clock := ratelimit.WithClock(func() time.Time { return f.Now })
			l := newNamed(t, f.rdb, tc.name, append(tc.opts, clock)...)
			p := newPartner(t)
			var dialed atomic.Int64
			rt := httplimit.NewTransport(slowDial(3*margin, &dialed), l, constKey, margin)
			if _, err := roundTrip(t, rt, ctx, p.URL); err != nil {
				t.Fatal(err)
			}
			if p.count() != 1 {
				t.Fatalf("%d requests at the partner, want 1", p.count())
			}
			d, err := l.Peek(ctx, "partner")
			if err != nil {
				t.Fatal(err)
			}
			counted := d.Limit.Burst - d.Remaining
			if counted != 1 {
				t.Errorf("the limiter counted %d for 1 request sent: the stale admission was not given back", counted)
			}
		})
	}
}
