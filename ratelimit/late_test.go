package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// lateReplies is a redis.Scripter whose calls Redis runs at once but whose
// replies are held back until release: an answer that comes after its
// caller left. With cut, a held call whose context ends returns its
// context's error (a client that heeds contexts) and its reply is lost.
type lateReplies struct {
	ratelimit.Client
	held    chan struct{}
	arrived chan struct{}
	cut     bool
}

func newLateReplies(t *testing.T, rdb *redis.Client) *lateReplies {
	if err := bindings.LoadAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	return &lateReplies{Client: rdb, held: make(chan struct{}), arrived: make(chan struct{}, 10000)}
}

func (s *lateReplies) pass(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	s.arrived <- struct{}{}
	if !s.cut {
		<-s.held
		return cmd
	}
	select {
	case <-s.held:
		return cmd
	case <-ctx.Done():
		c := redis.NewCmd(ctx)
		c.SetErr(ctx.Err())
		return c
	}
}

func (s *lateReplies) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.pass(ctx, s.Client.EvalSha(ctx, sha1, keys, args...))
}

func (s *lateReplies) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.pass(ctx, s.Client.Eval(ctx, script, keys, args...))
}

// lateEvents collects a limiter's late-refund events.
type lateEvents chan ratelimit.Event

func (c lateEvents) hook(_ context.Context, e ratelimit.Event) {
	if e.Decision.Source == "late-refund" {
		c <- e
	}
}

// wait returns the next n events, failing after 5 s without them.
func (c lateEvents) wait(t *testing.T, n int) []ratelimit.Event {
	t.Helper()
	var es []ratelimit.Event
	for len(es) < n {
		select {
		case e := <-c:
			es = append(es, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d late-refund events within 5 s, want %d", len(es), n)
		}
	}
	return es
}

// An admission whose answer comes after its caller was answered otherwise
// (a fallback's decision, its context's error) is given back, but for a
// window's counted on the server's clock (no WithClock), whose window is
// the server's to know: that one stays counted, told so. (Here Redis's
// TIME is frozen before every deadline: the scripts' deadline cannot
// refuse the call, only the refund can undo it.)
func TestLateAnswersAreGivenBack(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval, ratelimit.FixedWindow} {
		for _, how := range []string{"timeout", "cancel", "deadline"} {
			t.Run(alg.String()+"/"+how, func(t *testing.T) {
				f := newFrozen(t)
				s := newLateReplies(t, f.rdb)
				events := make(lateEvents, 10)
				opts := []ratelimit.Option{ratelimit.WithAlgorithm(alg), ratelimit.WithFallback(ratelimit.FailClosed), ratelimit.WithHook(events.hook)}
				c, cancel := context.WithCancel(ctx)
				defer cancel()
				switch how {
				case "timeout":
					opts = append(opts, ratelimit.WithTimeout(30*time.Millisecond))
				case "deadline":
					c, cancel = context.WithTimeout(ctx, 30*time.Millisecond)
					defer cancel()
				}
				l, err := ratelimit.New(s, "late", ratelimit.PerMinute(10), opts...)
				if err != nil {
					t.Fatal(err)
				}
				type answer struct {
					d   ratelimit.Decision
					err error
				}
				got := make(chan answer, 1)
				go func() { d, err := l.AllowN(c, "k", 3); got <- answer{d, err} }()
				<-s.arrived
				if how == "cancel" {
					cancel()
				}
				a := <-got
				switch {
				case how == "timeout" && (a.err != nil || a.d.Allowed || a.d.Fallback != ratelimit.FailClosed):
					t.Fatalf("past the timeout: %v, %v; want fail-closed's denial", a.d, a.err)
				case how != "timeout" && (a.err == nil || errors.Is(a.err, ratelimit.ErrUnavailable)):
					t.Fatalf("a caller that gave up: %v, %v; want its context's error", a.d, a.err)
				}
				close(s.held)
				e := events.wait(t, 1)[0]
				if e.Cost != -3 || e.Key != "k" || e.Name != "late" {
					t.Errorf("the late answer's event: %+v", e)
				}
				want := int64(10)
				if alg == ratelimit.FixedWindow {
					want = 7
					if e.Err == nil || !strings.Contains(e.Err.Error(), "stays counted") {
						t.Errorf("a late admission of a window on the server's clock: %v, want it told as counted", e.Err)
					}
				} else if e.Err != nil {
					t.Errorf("the refund failed: %v", e.Err)
				}
				if d, err := l.Peek(ctx, "k"); err != nil || d.Remaining != want {
					t.Errorf("after the late answer: %v, %v; want %d left", d, err, want)
				}
			})
		}
	}
}

// A batch's admissions whose callers left while it was on its way are
// given back, in one refund with an event each; the waiter that stayed
// keeps its admission.
func TestLateBatchIsGivenBack(t *testing.T) {
	f := newFrozen(t)
	s := newLateReplies(t, f.rdb)
	events := make(lateEvents, 10)
	l, _ := ratelimit.New(s, "late", ratelimit.PerMinute(10), ratelimit.WithHook(events.hook))
	first := make(chan error, 1)
	go func() { _, err := l.Allow(ctx, "k"); first <- err }()
	<-s.arrived
	var ctxs []context.CancelFunc
	type answer struct {
		d   ratelimit.Decision
		err error
	}
	answers := make([]chan answer, 3)
	for i := range answers {
		c, cancel := context.WithCancel(ctx)
		ctxs = append(ctxs, cancel)
		answers[i] = make(chan answer, 1)
		go func() { d, err := l.AllowN(c, "k", 2); answers[i] <- answer{d, err} }()
		queued(t, l, "k", i+1)
	}
	// The first call's answer comes, and the three go out as one batch,
	// held too; two of their callers leave.
	s.held <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-s.arrived
	queued(t, l, "k", 0)
	ctxs[0]()
	ctxs[1]()
	for i := range 2 {
		if a := <-answers[i]; !errors.Is(a.err, context.Canceled) {
			t.Fatalf("caller %d that left: %v, %v", i, a.d, a.err)
		}
	}
	close(s.held)
	if a := <-answers[2]; a.err != nil || !a.d.Allowed || a.d.Source != "redis-batch" {
		t.Fatalf("the caller that stayed: %v, %v", a.d, a.err)
	}
	for _, e := range events.wait(t, 2) {
		if e.Err != nil || e.Cost != -2 {
			t.Errorf("a late batch admission's event: %+v", e)
		}
	}
	if d, err := l.Peek(ctx, "k"); err != nil || d.Remaining != 7 {
		t.Errorf("after the batch: %v, %v; want 7 left (1 + 2 counted, 2 × 2 given back)", d, err)
	}
	for _, c := range ctxs {
		c()
	}
}

// At most a bound of calls are read on past their callers (1024; 16
// here, so that a slow machine gives all of them back within their 3 s);
// the others are cut as their callers leave, and told as maybe counted.
func TestLateAnswersAreBounded(t *testing.T) {
	if ratelimit.MaxLate() != 1024 {
		t.Errorf("the bound is %d, docs/limiters.md says 1024", ratelimit.MaxLate())
	}
	f := newFrozen(t)
	s := newLateReplies(t, f.rdb)
	s.cut = true
	const n, bound = 22, 16
	events := make(lateEvents, n)
	l, _ := ratelimit.New(s, "late", ratelimit.PerMinute(1e6), ratelimit.WithoutCoalescing(), ratelimit.WithHook(events.hook))
	ratelimit.SetMaxLate(l, bound)
	c, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Allow(c, "k"+string(rune('a'+i%26))); !errors.Is(err, context.Canceled) {
				t.Errorf("a caller that left: %v", err)
			}
		}()
	}
	for range n {
		<-s.arrived
	}
	cancel()
	wg.Wait()
	var cut int
	for _, e := range events.wait(t, n-bound) {
		if e.Err == nil || !strings.Contains(e.Err.Error(), "not read") {
			t.Errorf("a call cut past the bound: %+v", e)
		}
		cut++
	}
	close(s.held)
	var given atomic.Int64
	for _, e := range events.wait(t, bound) {
		if e.Err == nil {
			given.Add(1)
		}
	}
	if given.Load() != bound {
		t.Errorf("%d of the %d calls read on were given back", given.Load(), bound)
	}
}

// replyDelay is a TCP proxy before a real server that holds back every
// reply by delay: Redis runs a call at once, and its caller hears of it
// late.
type replyDelay struct {
	addr  string
	delay atomic.Int64 // ns
}

func newReplyDelay(t *testing.T, target string) *replyDelay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDelay{addr: ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(p.delay.Load()))
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// On a real server, a reply that reaches the client after the caller's
// timeout no longer leaves its admission counted: the key's state is the
// model's, in which the caller that got a fallback's decision counted
// nothing. Both with go-redis reading past a context's deadline (its
// default) and heeding it.
func TestLateAnswersOnRealRedis(t *testing.T) {
	srv := redisserver.New(t)
	p := newReplyDelay(t, srv.Addr)
	for _, heed := range []bool{false, true} {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ContextTimeoutEnabled: heed})
		defer rdb.Close()
		if err := bindings.LoadAll(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval} {
			events := make(lateEvents, 10)
			l := newLimiter(t, rdb, alg, ratelimit.WithTimeout(100*time.Millisecond), ratelimit.WithFallback(ratelimit.FailOpen), ratelimit.WithHook(events.hook))
			look := newLimiter(t, rdb, alg) // the same state, no timeout
			key := fmt.Sprintf("late:%v:%v", heed, alg)
			// A connection ready in the pool: the call reaches Redis at
			// once, well before its deadline, and Redis counts it.
			if _, err := look.Peek(ctx, key); err != nil {
				t.Fatal(err)
			}
			p.delay.Store(int64(500 * time.Millisecond))
			d, err := l.AllowN(ctx, key, 4)
			if err != nil || d.Fallback != ratelimit.FailOpen {
				t.Fatalf("heed %v, %v: %v, %v; want fail-open's decision", heed, alg, d, err)
			}
			e := events.wait(t, 1)[0]
			p.delay.Store(0)
			if e.Err != nil || e.Cost != -4 {
				t.Errorf("heed %v, %v: the refund's event %+v", heed, alg, e)
			}
			if d, err := look.Peek(ctx, key); err != nil || d.Remaining != d.Limit.Burst {
				t.Errorf("heed %v, %v: after the late answer: %v, %v; want a full limit", heed, alg, d, err)
			}
		}
	}
}

// The scenario an outside audit measured: callers with a 50 ms timeout on
// a few keys, at a load of 8, while redis-server stops (SIGSTOP) now and
// then for longer than the timeout. A call Redis ran just before a stop
// answers after its caller's fallback decided; in the end Redis has
// counted exactly what the callers were told it admitted.
func TestLateAnswersUnderStalls(t *testing.T) {
	srv := redisserver.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	var refunds atomic.Int64
	// One unit lasts an hour: the test's seconds give nothing back, so
	// Burst − Remaining is what Redis counted.
	limit := ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 200000}
	l, err := ratelimit.New(rdb, "stalls", limit, ratelimit.WithTimeout(50*time.Millisecond), ratelimit.WithFallback(ratelimit.FailOpen),
		ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
			if e.Decision.Source == "late-refund" && e.Err == nil {
				refunds.Add(1)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "b", "c"}
	var seen [3]atomic.Int64
	var fallbacks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := (g + i) % len(keys)
				d, err := l.Allow(context.Background(), keys[k])
				switch {
				case err != nil:
					t.Errorf("a decision failed: %v", err)
					return
				case d.Cause != nil:
					fallbacks.Add(1)
				case d.Allowed:
					seen[k].Add(1)
				}
			}
		}()
	}
	for range 20 {
		time.Sleep(60 * time.Millisecond)
		srv.Pause()
		time.Sleep(120 * time.Millisecond)
		srv.Resume()
	}
	close(stop)
	wg.Wait()
	// The late answers are read and given back in the background: wait
	// for Redis's count to come down to the callers' (up to lateWithin
	// and a refund's bound).
	var counted [3]int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		same := true
		for k, key := range keys {
			d, err := l.Peek(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			counted[k] = limit.Burst - d.Remaining
			same = same && counted[k] == seen[k].Load()
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			for k, key := range keys {
				t.Errorf("key %s: Redis counted %d, the callers were told of %d admissions", key, counted[k], seen[k].Load())
			}
			break
		}
	}
	t.Logf("%d admissions, %d fallback decisions, %d late admissions given back", seen[0].Load()+seen[1].Load()+seen[2].Load(), fallbacks.Load(), refunds.Load())
}

// A call read on past its caller ends when the client is closed, long
// before its 3 s bound (goleak gives up within about a second).
func TestLateReadsEndWithTheClient(t *testing.T) {
	addr, _ := hungServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	l := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithTimeout(20*time.Millisecond), ratelimit.WithFallback(ratelimit.FailOpen))
	for _, key := range []string{"a", "b", "c"} {
		if d, err := l.Allow(ctx, key); err != nil || d.Cause == nil {
			t.Fatalf("a hung server: %v, %v; want fail-open's decision", d, err)
		}
	}
	rdb.Close()
}

// A lockout whose start answered late stays: the request that used the
// limit up counted, and the lockout protects. The Event says so.
func TestLateLockoutStays(t *testing.T) {
	f := newFrozen(t)
	s := newLateReplies(t, f.rdb)
	events := make(lateEvents, 10)
	l, _ := ratelimit.New(s, "late", ratelimit.PerMinute(1), ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(time.Hour), ratelimit.WithHook(events.hook))
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		d   ratelimit.Decision
		err error
	}
	got := make(chan answer, 1)
	go func() { d, err := l.Allow(c, "k"); got <- answer{d, err} }()
	<-s.arrived // the lockout's peek
	s.held <- struct{}{}
	<-s.arrived // the limit, used up
	s.held <- struct{}{}
	<-s.arrived // the lockout's start, held
	cancel()
	if a := <-got; a.err != nil || !a.d.Allowed || a.d.LockedOut {
		t.Fatalf("a request whose lockout start was not answered: %v, %v; want it allowed, not locked out", a.d, a.err)
	}
	close(s.held)
	if e := events.wait(t, 1)[0]; e.Err == nil || !strings.Contains(e.Err.Error(), "lockout stays") {
		t.Errorf("the lockout's late start: %+v", e)
	}
	if d, err := l.Peek(ctx, "k"); err != nil || !d.LockedOut {
		t.Errorf("after the lockout's late start: %v, %v; want it locked out", d, err)
	}
}
