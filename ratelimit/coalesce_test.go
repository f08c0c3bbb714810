package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/scriptingtest"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

// gate is a redis.Scripter between a limiter and Redis that records every
// script call (its ARGV and its reply, in the order Redis ran them: calls
// pass one at a time), and can hold calls back: while held, a call waits
// at the gate before it is sent.
type gate struct {
	ratelimit.Client
	mu      sync.Mutex // one call at a time, so the record is Redis's order
	calls   []gateCall
	held    chan struct{} // closed to let calls through; nil: no hold
	arrived chan int      // the number of requests of each call at the gate
	before  func(requests int)
}

type gateCall struct {
	argv  []any // ARGV, after the key
	reply any
}

// newGate puts a gate before c, with the bundle's scripts loaded on rdb
// (so that no call meets NOSCRIPT and is sent twice).
func newGate(t *testing.T, c ratelimit.Client, rdb redis.Scripter) *gate {
	if err := bindings.LoadAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	return &gate{Client: c, arrived: make(chan int, 10000)}
}

// hold makes calls wait at the gate until release.
func (g *gate) hold() { g.held = make(chan struct{}) }

func (g *gate) release() { close(g.held) }

func (g *gate) pass(args []any, send func() *redis.Cmd) *redis.Cmd {
	n := (len(args) - 5) / 2 // a batch script's requests
	g.arrived <- n
	if g.held != nil {
		<-g.held
	}
	if g.before != nil {
		g.before(n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	cmd := send()
	if cmd.Err() == nil {
		g.calls = append(g.calls, gateCall{args, cmd.Val()})
	}
	return cmd
}

func (g *gate) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return g.pass(args, func() *redis.Cmd { return g.Client.EvalSha(ctx, sha1, keys, args...) })
}

func (g *gate) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return g.pass(args, func() *redis.Cmd { return g.Client.Eval(ctx, script, keys, args...) })
}

// requests counts the requests of every call that went through, in order.
func (g *gate) requests() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for _, c := range g.calls {
		out = append(out, (len(c.argv)-5)/2)
	}
	return out
}

// waitArrived waits until n calls have reached the gate.
func (g *gate) waitArrived(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.arrived:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d calls reached Redis", i, n)
		}
	}
}

// queued waits until a limiter's coalescer holds n waiters for key: their
// requests are not answered yet, and count nothing in Redis yet either.
func queued(t *testing.T, l *ratelimit.Limiter, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ratelimit.Waiting(l, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters for %q, want %d", ratelimit.Waiting(l, key), key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// While a decision for a key is in flight, the decisions that come for it
// wait and then go to Redis as one call, with the answers they would get
// one by one; with WithoutCoalescing each goes alone.
func TestCoalescing(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval} {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/off=%v", alg, off), func(t *testing.T) {
				f := newFrozen(t)
				g := newGate(t, f.rdb, f.rdb)
				opts := []ratelimit.Option{ratelimit.WithAlgorithm(alg)}
				if off {
					opts = append(opts, ratelimit.WithoutCoalescing())
				}
				l, err := ratelimit.New(g, "c", ratelimit.PerMinute(10), opts...)
				if err != nil {
					t.Fatal(err)
				}
				g.hold()
				var wg sync.WaitGroup
				ds := make([]ratelimit.Decision, 12)
				for i := range ds {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var err error
						if ds[i], err = l.Allow(ctx, "k"); err != nil {
							t.Error(err)
						}
					}()
					if i == 0 {
						g.waitArrived(t, 1) // the first call is in flight
					}
				}
				if off {
					g.waitArrived(t, 11)
				} else {
					queued(t, l, "k", 11)
				}
				g.release()
				wg.Wait()
				want := []int{1, 11}
				if off {
					want = []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
				}
				if diff := cmp.Diff(want, g.requests()); diff != "" {
					t.Errorf("requests per call (-want +got):\n%s", diff)
				}
				var left []int64
				allowed := 0
				for _, d := range ds {
					if d.Allowed {
						allowed++
						left = append(left, d.Remaining)
					} else if d.RetryAfter <= 0 || d.Remaining != 0 {
						t.Errorf("a denial: %v", d)
					}
				}
				sort.Slice(left, func(i, j int) bool { return left[i] > left[j] })
				if diff := cmp.Diff([]int64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, left); allowed != 10 || diff != "" {
					t.Errorf("%d allowed; Remaining (-want +got):\n%s", allowed, diff)
				}
			})
		}
	}
}

// The model check: any number of goroutines in several processes (here
// limiters with clients of their own on one Redis), with costs from 0
// (Peek) to above the burst and a limit that changes mid-run (WithLimit
// copies), get exactly the answers the same requests would get sent one
// by one in the order Redis ran them. The server's clock stands still, so
// that order alone decides each answer; the gate records it.
func TestCoalescedIsSequential(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval} {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			g := newGate(t, nil, f.rdb) // every process's calls pass one gate: one order
			limits := []ratelimit.Limit{ratelimit.PerMinute(40), ratelimit.PerMinute(40).WithBurst(25), ratelimit.PerSecond(1).WithBurst(60)}
			type answer struct {
				limit ratelimit.Limit
				cost  int64
				d     ratelimit.Decision
			}
			var (
				mu      sync.Mutex
				answers []answer
				wg      sync.WaitGroup
			)
			for p := 0; p < 3; p++ {
				rdb := redis.NewClient(&redis.Options{Addr: f.Addr()})
				defer rdb.Close()
				pg := &procGate{gate: g, c: rdb}
				base, err := ratelimit.New(pg, "model", limits[0], ratelimit.WithAlgorithm(alg))
				if err != nil {
					t.Fatal(err)
				}
				for w := 0; w < 16; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(p), uint64(w)))
						for i := 0; i < 40; i++ {
							lim := limits[0]
							if i >= 20 { // the limit changes mid-run, in every process
								lim = limits[1+rng.IntN(2)]
							}
							l, _ := base.WithLimit(lim)
							cost := int64(rng.IntN(4))
							if rng.IntN(20) == 0 {
								cost = 70 // above every burst
							}
							var d ratelimit.Decision
							var err error
							if cost == 0 {
								d, err = l.Peek(ctx, "k")
							} else {
								d, err = l.AllowN(ctx, "k", cost)
							}
							if err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							answers = append(answers, answer{lim, cost, d})
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			// The same requests one call each, in Redis's order, on a fresh
			// key at the same instant.
			script := bindings.GCRAScript
			if alg != ratelimit.GCRA {
				script = bindings.TokenBucketScript
			}
			var want []string
			batches := 0
			for _, c := range g.calls {
				n := (len(c.argv) - 5) / 2
				if n > 1 {
					batches++
				}
				for i := 0; i < n; i++ {
					argv := append(append([]any(nil), c.argv[:5]...), c.argv[5+2*i], c.argv[6+2*i])
					r, err := script.Run(ctx, f.rdb, []string{"replay"}, argv...).Int64Slice()
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, fmt.Sprintf("%v %v %v", c.argv[:3], c.argv[5+2*i], r))
				}
			}
			var got []string
			for _, a := range answers {
				retry := a.d.RetryAfter.Milliseconds()
				if a.d.RetryAfter == ratelimit.Never {
					retry = -1
				}
				allowed := 0
				if a.d.Allowed {
					allowed = 1
				}
				args := []any{a.limit.Burst, a.limit.Rate, a.limit.Period.Milliseconds()}
				got = append(got, fmt.Sprintf("%v %v %v", args, a.cost, []int64{int64(allowed), a.d.Remaining, retry, a.d.ResetAfter.Milliseconds()}))
			}
			sort.Strings(want)
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("answers (-one by one in Redis's order +coalesced):\n%s", diff)
			}
			if len(got) != 3*16*40 || batches == 0 {
				t.Fatalf("%d answers, %d batches", len(got), batches)
			}
			a, _ := f.Get("rl:model:{k}")
			if b, _ := f.Get("replay"); a != b {
				t.Errorf("the key holds %q, one by one %q", a, b)
			}
			t.Logf("%d requests in %d calls", len(got), len(g.calls))
		})
	}
}

// procGate is one process's client behind the gate every process shares.
type procGate struct {
	*gate
	c redis.Scripter
}

func (p *procGate) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.gate.pass(args, func() *redis.Cmd { return p.c.EvalSha(ctx, sha1, keys, args...) })
}

func (p *procGate) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.gate.pass(args, func() *redis.Cmd { return p.c.Eval(ctx, script, keys, args...) })
}

func (p *procGate) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return p.c.ScriptExists(ctx, hashes...)
}

func (p *procGate) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return p.c.ScriptLoad(ctx, script)
}

// A waiter whose context ends before its batch is sent leaves with its
// context's error and counts nothing; one whose batch Redis runs after its
// deadline counts nothing either, though the others of the batch count.
func TestCoalescedDeadlines(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		l, _ := ratelimit.New(g, "d", ratelimit.PerMinute(10))
		g.hold()
		first := make(chan error, 1)
		go func() { _, err := l.Allow(ctx, "k"); first <- err }()
		g.waitArrived(t, 1)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		d, err := l.AllowN(short, "k", 5)
		if !errors.Is(err, context.DeadlineExceeded) || d.Allowed {
			t.Fatalf("a queued waiter past its deadline: %v, %v", d, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("it waited %v", took)
		}
		g.release()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if d, _ := l.Peek(ctx, "k"); d.Remaining != 9 {
			t.Errorf("after one request and one that left: %v (want 9 left)", d)
		}
		if diff := cmp.Diff([]int{1, 1}, g.requests()); diff != "" {
			t.Errorf("requests per call (-want +got):\n%s", diff)
		}
		if n := len(g.arrived); n != 1 {
			t.Errorf("%d more calls set out for Redis, want 1 (the Peek): the waiter that left was sent", n)
		}
	})
	t.Run("sent", func(t *testing.T) {
		// A server clock that moves, so that Redis's TIME passes the deadline
		// while the batch is on its way (held at the gate).
		f := newFrozen(t)
		stop := make(chan struct{})
		ticked := make(chan struct{})
		go func() {
			defer close(ticked)
			for {
				f.SetTime(time.Now())
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		defer func() { close(stop); <-ticked }()
		g := newGate(t, f.rdb, f.rdb)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		g.before = func(n int) {
			if n > 1 {
				// The batch is on its way: Redis gets it after the first
				// request's deadline.
				<-short.Done()
				time.Sleep(5 * time.Millisecond)
			}
		}
		l, _ := ratelimit.New(g, "d", ratelimit.PerMinute(10))
		g.hold()
		first := make(chan error, 1)
		go func() { _, err := l.Allow(ctx, "k"); first <- err }()
		g.waitArrived(t, 1)
		var wg sync.WaitGroup
		var shortErr, longErr error
		var long ratelimit.Decision
		wg.Add(2)
		go func() { defer wg.Done(); _, shortErr = l.AllowN(short, "k", 5) }()
		queued(t, l, "k", 1)
		go func() { defer wg.Done(); long, longErr = l.AllowN(ctx, "k", 2) }()
		queued(t, l, "k", 2)
		g.release() // the batch of both is sent at once, and reaches Redis late
		wg.Wait()
		if err := <-first; err != nil || longErr != nil || !long.Allowed {
			t.Fatal(err, long, longErr)
		}
		if !errors.Is(shortErr, context.DeadlineExceeded) {
			t.Errorf("the request past its deadline: %v", shortErr)
		}
		if d, _ := l.Peek(ctx, "k"); d.Remaining != 7 {
			t.Errorf("after 1 and 2 counted and 5 past their deadline: %v (want 7 left)", d)
		}
		if diff := cmp.Diff([]int{1, 2, 1}, g.requests()); diff != "" {
			t.Errorf("requests per call (-want +got):\n%s", diff)
		}
		// The script said so: the batch's reply marks the request expired.
		if r := g.calls[1].reply.([]any); r[0] != int64(-1) || r[4] != int64(1) {
			t.Errorf("the batch's reply %v: want the first request expired, the second allowed", r)
		}
	})
}

// Every admission is Redis's, from any number of processes: 64 goroutines
// in 4 processes on one hot key of a real Redis admit exactly the burst
// (the limit refills far slower than the test runs), in batches.
func TestCoalescedNeverOverAdmits(t *testing.T) {
	addr := redisserver.New(t).Addr
	const burst = 500
	var admitted atomic.Int64
	var calls atomic.Int64
	var wg sync.WaitGroup
	key := fmt.Sprintf("hot-%d", time.Now().UnixNano())
	for p := 0; p < 4; p++ {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16})
		defer rdb.Close()
		rdb.AddHook(countHook{&calls})
		l, err := ratelimit.New(rdb, "over", ratelimit.Per(burst, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 30; i++ {
					d, err := l.Allow(ctx, key)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	// 1920 requests, one an hour per 7.2 s refilled: the burst and at most
	// one more per 7.2 s of the run.
	if n := admitted.Load(); n < burst || n > burst+1 {
		t.Errorf("%d admitted, want the burst of %d", n, burst)
	}
	t.Logf("%d requests in %d calls", 64*30, calls.Load())
}

// Batches go through every go-redis client as calls of their own: a
// client and a cluster client of real servers (the AutoPipeliner's test is
// in tests/autopipeline, rueidis's and valkey-go's in clients/).
func TestCoalescedOnClients(t *testing.T) {
	addr := redisserver.New(t).Addr
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	t.Run("client", func(t *testing.T) { scriptingtest.Coalescing(t, rdb, rdb) })
	t.Run("cluster", func(t *testing.T) {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisserver.NewCluster(t)})
		defer cc.Close()
		scriptingtest.Coalescing(t, cc, nil)
	})
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A caller alone on its key pays nothing for coalescing: its decision is
// one call, sent at once, allocating exactly what it does
// WithoutCoalescing.
func TestLoneDecisionCostsNothing(t *testing.T) {
	var c cannedScripter
	on, _ := ratelimit.New(c, "lone", ratelimit.PerSecond(10))
	off, _ := ratelimit.New(c, "lone", ratelimit.PerSecond(10), ratelimit.WithoutCoalescing())
	allow := func(l *ratelimit.Limiter) func() {
		return func() {
			if d, err := l.Allow(ctx, "user:42"); err != nil || !d.Allowed {
				t.Fatal(d, err)
			}
		}
	}
	if a, b := testing.AllocsPerRun(1000, allow(on)), testing.AllocsPerRun(1000, allow(off)); a != b {
		t.Errorf("a lone decision allocates %v times coalescing, %v without", a, b)
	}
}

// Callers who give up after 300 µs beside calm ones on one hot key, and
// with REDLIMIT_SATURATE=1 (make test sets it for this test in a step of
// its own) again with a busy loop on every core: the waiters a batch answers are reused for the requests
// after, so a waiter handed out again while its batch still held it would
// give a calm caller another's answer, or none. Every calm request passes
// (the limit is far off), and what Redis counted in the end is exactly
// what the callers were told passed: the impatient callers' admissions
// that came too late are given back.
func TestCoalescedImpatientBesideCalm(t *testing.T) {
	if os.Getenv("REDLIMIT_SATURATE") == "1" {
		testredis.Saturate(t)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.New(t).Addr, PoolSize: 32})
	defer rdb.Close()
	limit := ratelimit.Per(100, time.Hour).WithBurst(1_000_000) // nothing refills within the test
	l, err := ratelimit.New(rdb, "impatient", limit)
	if err != nil {
		t.Fatal(err)
	}
	var told, calmCalls, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				cost := int64(1 + (g+i)%3)
				if g%2 == 0 { // impatient
					c, cancel := context.WithTimeout(ctx, 300*time.Microsecond)
					d, err := l.AllowN(c, "hot", cost)
					cancel()
					switch {
					case err == nil && d.Allowed:
						told.Add(cost)
					case err != nil:
						gaveUp.Add(1)
					}
					continue
				}
				d, err := l.AllowN(ctx, "hot", cost)
				if err != nil || !d.Allowed {
					t.Errorf("a calm request of %d: %+v, %v; want it to pass", cost, d, err)
					return
				}
				told.Add(cost)
				calmCalls.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // about 3 s with the cores busy
		t.Fatal("callers still wait after 60 s: a request was never answered")
	}
	// Late admissions are given back on their own goroutines.
	var used int64
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		d, err := l.Peek(ctx, "hot")
		if err != nil {
			t.Fatal(err)
		}
		if used = limit.Burst - d.Remaining; used == told.Load() {
			break
		}
	}
	t.Logf("%d calm requests, %d impatient ones gave up; %d counted, %d told passed", calmCalls.Load(), gaveUp.Load(), used, told.Load())
	if used != told.Load() {
		t.Errorf("Redis counted %d, callers were told %d passed", used, told.Load())
	}
	if gaveUp.Load() == 0 {
		t.Error("no impatient caller gave up: the test tested nothing of them")
	}
}
