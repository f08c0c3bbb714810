package inflight_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

func mustConcurrency(t *testing.T, rdb redis.Scripter, limit int64, ttl time.Duration, opts ...inflight.Option) *inflight.Limiter {
	t.Helper()
	c, err := inflight.New(rdb, "jobs", limit, ttl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRefuses(t *testing.T) {
	f := newFrozen(t)
	for _, tc := range []struct {
		name  string
		limit int64
		ttl   time.Duration
		opts  []inflight.Option
	}{
		{"n", 0, time.Second, nil},
		{"n", 10001, time.Second, nil},
		{"n", 1, 0, nil},
		{"n", 1, 1500 * time.Microsecond, nil},
		{"n", 1, 24*time.Hour + time.Millisecond, nil},
		{"bad name", 1, time.Second, nil},
		{"", 1, time.Second, nil},
		{"n", 1, time.Second, []inflight.Option{inflight.WithPrefix("a{")}},
		{"n", 1, time.Second, []inflight.Option{inflight.WithPrefix("")}},
		{"n", 1, time.Second, []inflight.Option{inflight.WithTimeout(-1)}},
		{"n", 1, time.Second, []inflight.Option{inflight.WithFallback(ratelimit.FailLocal(0))}},
		{"n", 1, time.Second, []inflight.Option{inflight.WithFallback(ratelimit.FailLocal(2))}},
	} {
		if _, err := inflight.New(f.rdb, tc.name, tc.limit, tc.ttl, tc.opts...); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%q limit %d ttl %v: %v, want ErrInvalid", tc.name, tc.limit, tc.ttl, err)
		}
	}
	if _, err := inflight.New(nil, "n", 1, time.Second); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("no client: %v", err)
	}
	for _, ok := range []struct {
		limit int64
		ttl   time.Duration
	}{{1, time.Millisecond}, {10000, 24 * time.Hour}} {
		if _, err := inflight.New(f.rdb, "n", ok.limit, ok.ttl); err != nil {
			t.Errorf("limit %d ttl %v: %v", ok.limit, ok.ttl, err)
		}
	}
}

var leaseID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestConcurrencyAcquireRelease(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	c := mustConcurrency(t, f.rdb, 2, 10*time.Second)
	if got := c.RedisKey("u"); got != "rl:inflight:jobs:{u}" {
		t.Errorf("RedisKey %q", got)
	}
	a, d, err := c.Acquire(ctx, "u")
	if err != nil || !d.Allowed || d.Limit != 2 || d.Remaining != 1 || d.ResetAfter != 10*time.Second {
		t.Fatalf("first: %v %v", d, err)
	}
	b, _, _ := c.Acquire(ctx, "u")
	if !leaseID.MatchString(a.ID()) || a.ID() == b.ID() || a.Key() != "u" {
		t.Errorf("ids %q %q, key %q", a.ID(), b.ID(), a.Key())
	}
	f.Advance(time.Second)
	x, d, err := c.Acquire(ctx, "u")
	if err != nil || d.Allowed || x != nil || d.RetryAfter != 9*time.Second {
		t.Fatalf("over the cap: %v %v %v", x, d, err)
	}
	// Another key is not capped by this one.
	if _, d, _ := c.Acquire(ctx, "v"); !d.Allowed {
		t.Error("another key was denied")
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
	if err := a.Renew(ctx); !errors.Is(err, inflight.ErrLeaseLost) {
		t.Errorf("renew after release: %v", err)
	}
	if _, d, _ = c.Acquire(ctx, "u"); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after a release: %v", d)
	}
	// A nil lease (a denial) does nothing.
	var none *inflight.Lease
	if none.Release(ctx) != nil || none.Renew(ctx) != nil {
		t.Error("a nil lease did something")
	}
	none.KeepAlive(ctx)()
}

// A holder that never comes back loses its lease when the TTL runs out;
// renewing keeps it.
func TestConcurrencyLeaseExpires(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	c := mustConcurrency(t, f.rdb, 1, 10*time.Second)
	crashed, _, _ := c.Acquire(ctx, "u")
	f.Advance(9 * time.Second)
	if _, d, _ := c.Acquire(ctx, "u"); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("at 9 s: %v", d)
	}
	f.Advance(time.Second)
	renewed, d, _ := c.Acquire(ctx, "u")
	if !d.Allowed {
		t.Fatalf("at 10 s: %v", d)
	}
	if err := crashed.Renew(ctx); !errors.Is(err, inflight.ErrLeaseLost) {
		t.Errorf("renew of an expired lease: %v", err)
	}
	if err := crashed.Release(ctx); err != nil {
		t.Errorf("release after a lost renew: %v (the lease is known lost)", err)
	}
	f.Advance(8 * time.Second)
	if err := renewed.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	f.Advance(8 * time.Second) // 16 s after it was taken, 8 after the renew
	if _, d, _ := c.Acquire(ctx, "u"); d.Allowed {
		t.Error("a renewed lease expired at its first TTL")
	}
	f.Advance(3 * time.Second)
	if err := renewed.Release(ctx); !errors.Is(err, inflight.ErrLeaseLost) {
		t.Errorf("first release of an expired lease: %v, want ErrLeaseLost", err)
	}
	if err := renewed.Release(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
}

// KeepAlive renews on its own: with a caller clock moved past the first
// expiry, the lease still holds once a renew has landed.
func TestConcurrencyKeepAlive(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	var now atomic.Int64
	now.Store(t0.UnixMicro())
	clock := inflight.WithClock(func() time.Time { return time.UnixMicro(now.Load()) })
	c := mustConcurrency(t, f.rdb, 1, 300*time.Millisecond, clock)
	lease, _, _ := c.Acquire(ctx, "u")
	score := func() float64 { return f.rdb.ZScore(ctx, c.RedisKey("u"), lease.ID()).Val() }
	now.Add(200e3) // 200 ms on: a renew now runs to 500 ms
	stop := lease.KeepAlive(ctx)
	want := float64(t0.UnixMicro() + 500e3)
	for deadline := time.Now().Add(20 * time.Second); score() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("no renew within 20 s: expiry %v", score())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	now.Add(250e3) // 450 ms: past the first expiry, before the renewed one
	if _, d, _ := c.Acquire(ctx, "u"); d.Allowed {
		t.Errorf("the kept lease was not held at 450 ms: %v", d)
	}
	if err := lease.Release(ctx); err != nil {
		t.Error(err)
	}
}

// lostReply runs a script for real, then reports a network error: the
// acquire took its slot, but the caller never learns it.
type lostReply struct{ redis.Scripter }

func (l lostReply) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	cmd := l.Scripter.EvalSha(ctx, sha1, keys, args...)
	if len(args) > 0 && args[0] == "acquire" {
		cmd.SetErr(errors.New("read tcp: connection reset by peer"))
	}
	return cmd
}

// An acquire whose reply is lost gives its slot back in the background.
func TestConcurrencyForgetsALostAcquire(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	c := mustConcurrency(t, lostReply{f.rdb}, 1, time.Hour, inflight.WithFallback(ratelimit.FailClosed))
	lease, d, err := c.Acquire(ctx, "u")
	if err != nil || d.Allowed || d.Fallback != ratelimit.FailClosed || lease != nil {
		t.Fatalf("got %v %v %v", lease, d, err)
	}
	for deadline := time.Now().Add(20 * time.Second); f.rdb.Exists(ctx, c.RedisKey("u")).Val() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the lost acquire's slot was not given back within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConcurrencyFailurePolicies(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	ctx := context.Background()
	open := mustConcurrency(t, down, 1, time.Second, inflight.WithFallback(ratelimit.FailOpen))
	lease, d, err := open.Acquire(ctx, "u")
	if err != nil || !d.Allowed || d.Fallback != ratelimit.FailOpen || lease != nil || d.Cause == nil {
		t.Errorf("fail-open: %v %v %v", lease, d, err)
	}
	strict := mustConcurrency(t, down, 1, time.Second)
	if _, _, err := strict.Acquire(ctx, "u"); err == nil {
		t.Error("no fallback: no error")
	}
	if _, _, err := strict.Acquire(ctx, ""); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("empty key: %v", err)
	}
}

// The middleware: at most limit handlers run at once per key; the rest get
// a 429 with Retry-After: 1; a lease is released when the handler returns,
// panics, or its client hangs up.
func TestConcurrencyMiddleware(t *testing.T) {
	f := newFrozen(t)
	c := mustConcurrency(t, f.rdb, 2, time.Minute)
	var running, most atomic.Int64
	release, hang, hanging := make(chan struct{}), make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 10)
	h := inflight.Middleware(c, httplimit.ByHeader("X-User"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- struct{}{}
		switch r.URL.Path {
		case "/panic":
			running.Add(-1)
			panic(http.ErrAbortHandler)
		case "/wait":
			<-release
		case "/hang":
			close(hanging)
			<-hang
		}
		running.Add(-1)
	}))
	req := func(path, user string) *http.Request {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("X-User", user)
		return r
	}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); serve(h, req("/wait", "ann")) }()
		<-started
	}
	rec := serve(h, req("/", "ann"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("RateLimit") != "" {
		t.Errorf("third: %d %v", rec.Code, rec.Header())
	}
	if p := problemOf(t, rec); p.Status != 429 {
		t.Errorf("problem %+v", p)
	}
	if rec := serve(h, req("/", "bob")); rec.Code != http.StatusOK {
		t.Errorf("another user: %d", rec.Code)
	}
	close(release)
	wg.Wait()
	if most.Load() > 2+1 { // ann's two and bob's one
		t.Errorf("%d handlers ran at once", most.Load())
	}
	// A panicking handler releases its lease.
	func() {
		defer func() { recover() }()
		serve(h, req("/panic", "ann"))
	}()
	<-started
	// A client that hangs up while its handler runs: the request's context
	// is cancelled, and the lease is released all the same when the
	// handler returns.
	key := c.RedisKey("header:x-user:ann")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); serve(h, req("/hang", "ann").WithContext(ctx)) }()
	select {
	case <-hanging:
	case <-done:
		t.Fatal("the hang-up request's handler never ran")
	}
	if n := f.rdb.ZCard(context.Background(), key).Val(); n != 1 {
		t.Errorf("%d leases while the handler runs, want 1", n)
	}
	cancel()
	close(hang)
	<-done
	if n := f.rdb.ZCard(context.Background(), key).Val(); n != 0 {
		t.Errorf("%d leases after the hung-up request's handler returned, want 0", n)
	}
	if n := f.rdb.Exists(context.Background(), c.RedisKey("header:x-user:ann")).Val(); n != 0 {
		t.Errorf("leases left after every handler returned: %v", f.rdb.ZRange(context.Background(), c.RedisKey("header:x-user:ann"), 0, -1).Val())
	}
}

func TestConcurrencyMiddlewareFailures(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	for _, tc := range []struct {
		policy ratelimit.Fallback
		want   int
	}{{ratelimit.FailOpen, 200}, {ratelimit.FailClosed, 503}, {ratelimit.Fallback{}, 503}} {
		c := mustConcurrency(t, down, 1, time.Second, inflight.WithFallback(tc.policy))
		h := inflight.Middleware(c, httplimit.ByHeader("X-User"))(okHandler)
		rec := serve(h, get("192.0.2.1:1", "X-User", "u"))
		if rec.Code != tc.want {
			t.Errorf("%v: %d, want %d", tc.policy, rec.Code, tc.want)
		}
		// A 503 says when to come back (it used to say nothing).
		if rec.Code == 503 && rec.Header().Get("Retry-After") != "1" {
			t.Errorf("%v: a 503 with Retry-After %q, want 1", tc.policy, rec.Header().Get("Retry-After"))
		}
	}
	f := newFrozen(t)
	c := mustConcurrency(t, f.rdb, 1, time.Second)
	h := inflight.Middleware(c, httplimit.ByHeader("X-User"))(okHandler)
	if rec := serve(h, get("192.0.2.1:1")); rec.Code != http.StatusBadRequest {
		t.Errorf("no key: %d", rec.Code)
	}
	denied := inflight.Middleware(c, httplimit.ByHeader("X-User"), inflight.WithDenied(func(w http.ResponseWriter, r *http.Request, d inflight.Decision) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec := serve(h, get("192.0.2.1:1", "X-User", "u")); rec.Code != http.StatusTooManyRequests {
			t.Errorf("nested: %d", rec.Code)
		}
	}))
	if rec := serve(denied, get("192.0.2.1:1", "X-User", "u")); rec.Code != http.StatusOK {
		t.Errorf("outer: %d", rec.Code)
	}
}

// The default answers' bodies, and the options that replace them, each
// called when its case comes.
func TestConcurrencyMiddlewareOptions(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	closed := mustConcurrency(t, down, 1, time.Second, inflight.WithFallback(ratelimit.FailClosed))
	rec := serve(inflight.Middleware(closed, httplimit.ByHeader("X-User"))(okHandler), get("192.0.2.1:1", "X-User", "u"))
	if p := problemOf(t, rec); rec.Code != http.StatusServiceUnavailable || p.Type != "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity" {
		t.Errorf("fail-closed: %d, problem %+v", rec.Code, p)
	}

	// WithConcurrencyError: called when Redis fails and there is no fallback.
	var failed error
	strict := mustConcurrency(t, down, 1, time.Second)
	h := inflight.Middleware(strict, httplimit.ByHeader("X-User"), inflight.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		failed = err
		w.WriteHeader(http.StatusTeapot)
	}))(okHandler)
	if rec := serve(h, get("192.0.2.1:1", "X-User", "u")); rec.Code != http.StatusTeapot || failed == nil {
		t.Errorf("no fallback, Redis down: %d, error handler got %v", rec.Code, failed)
	}

	// WithConcurrencyDenied: called with the limiter's decision when the
	// key is over its cap (the outer middleware holds the only slot).
	f := newFrozen(t)
	c := mustConcurrency(t, f.rdb, 1, time.Second)
	var calls int
	var got inflight.Decision
	inner := inflight.Middleware(c, httplimit.ByHeader("X-User"), inflight.WithDenied(func(w http.ResponseWriter, r *http.Request, d inflight.Decision) {
		calls++
		got = d
		w.WriteHeader(http.StatusServiceUnavailable)
	}))(okHandler)
	outer := inflight.Middleware(c, httplimit.ByHeader("X-User"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec := serve(inner, get("192.0.2.1:1", "X-User", "u")); rec.Code != http.StatusServiceUnavailable {
			t.Errorf("inner, over the cap: %d, want the denier's 503", rec.Code)
		}
	}))
	if rec := serve(outer, get("192.0.2.1:1", "X-User", "u")); rec.Code != http.StatusOK {
		t.Errorf("outer: %d", rec.Code)
	}
	if calls != 1 || got.Allowed || got.Limit != 1 || got.Cause != nil {
		t.Errorf("denier called %d times with %+v", calls, got)
	}
}

// FailLocal caps the requests in flight in this process at its share of
// the limit while Redis is down; a local lease is released in memory.
func TestFailLocal(t *testing.T) {
	c := mustConcurrency(t, downClient(t), 4, time.Second, inflight.WithFallback(ratelimit.FailLocal(0.5)))
	var leases []*inflight.Lease
	for i := 0; i < 2; i++ {
		l, d, err := c.Acquire(ctx, "u")
		if err != nil || !d.Allowed || l == nil || d.Limit != 2 || d.Remaining != int64(1-i) || d.Fallback != ratelimit.FailLocal(0.5) || !errors.Is(d.Cause, ratelimit.ErrUnavailable) {
			t.Fatalf("local acquire %d: %v, %v", i, d, err)
		}
		leases = append(leases, l)
	}
	if l, d, err := c.Acquire(ctx, "u"); err != nil || d.Allowed || l != nil {
		t.Errorf("over the local cap: %v, %v", d, err)
	}
	if _, d, _ := c.Acquire(ctx, "v"); !d.Allowed {
		t.Errorf("another key: %v", d)
	}
	if err := leases[0].Renew(ctx); err != nil {
		t.Errorf("renew a local lease: %v", err)
	}
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	leases[0].Release(ctx) // idempotent: frees one slot, once
	if _, d, _ := c.Acquire(ctx, "u"); !d.Allowed {
		t.Errorf("after a release: %v", d)
	}
	if _, d, _ := c.Acquire(ctx, "u"); d.Allowed {
		t.Errorf("a second Release freed a second slot: %v", d)
	}
}

// An Acquire's Decision, and so its hook's Event, says who decided in
// ratelimit's words: redis, or the fallback's word; nobody for an error.
func TestDecisionSource(t *testing.T) {
	f := newFrozen(t)
	down := downClient(t)
	for _, tc := range []struct {
		name string
		rdb  redis.Scripter
		opts []inflight.Option
		want string
	}{
		{"redis", f.rdb, nil, "redis"},
		{"no fallback", down, nil, ""},
		{"fail-open", down, []inflight.Option{inflight.WithFallback(ratelimit.FailOpen)}, "fail-open"},
		{"fail-closed", down, []inflight.Option{inflight.WithFallback(ratelimit.FailClosed)}, "fail-closed"},
		{"fail-local", down, []inflight.Option{inflight.WithFallback(ratelimit.FailLocal(1))}, "fail-local"},
	} {
		var seen []string
		hook := inflight.WithHook(func(_ context.Context, e inflight.Event) {
			if e.Op == "acquire" {
				seen = append(seen, e.Decision.Source)
			}
		})
		c := mustConcurrency(t, tc.rdb, 2, time.Second, append(tc.opts, hook)...)
		lease, d, _ := c.Acquire(ctx, "k")
		_ = lease.Release(ctx)
		if d.Source != tc.want || len(seen) != 1 || seen[0] != tc.want {
			t.Errorf("%s: Source %q, the hook saw %q, want %q", tc.name, d.Source, seen, tc.want)
		}
	}
}
