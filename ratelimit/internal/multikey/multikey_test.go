package multikey

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
)

// counting is a client that counts the commands it is sent, and can hold
// them at a gate.
type counting struct {
	*redis.Client
	sent atomic.Int64
	gate chan struct{}    // when not nil, each command waits for a value
	seen func(args []any) // when not nil, sees each command that passes the gate
}

func (c *counting) Process(ctx context.Context, cmd redis.Cmder) error {
	c.sent.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	if c.seen != nil {
		c.seen(cmd.Args())
	}
	return c.Client.Process(ctx, cmd)
}

func (c *counting) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, append(append([]any{"evalsha", sha, len(keys)}, stringsToAny(keys)...), args...)...)
	_ = c.Process(ctx, cmd)
	return cmd
}

func (c *counting) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, append(append([]any{"eval", src, len(keys)}, stringsToAny(keys)...), args...)...)
	_ = c.Process(ctx, cmd)
	return cmd
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func gcra(ctx context.Context, c redis.Scripter, key string, cost int64) (bindings.GCRAResult, error) {
	return bindings.GCRA(ctx, c, []string{key}, bindings.GCRAParams{Burst: 3, Rate: 3, Period: time.Minute, Take: bindings.GCRATakeAll,
		Requests: []bindings.GCRARequest{{Cost: cost}}})
}

// servers are the servers the stage runs on: miniredis, and a real
// redis-server (which CI requires).
func servers(t *testing.T) map[string]string {
	mr := miniredis.RunT(t)
	return map[string]string{"miniredis": mr.Addr(), "redis": redisserver.Start(t)}
}

// staged is the stage over a counting client of the emptied server at
// addr, and that server's own client.
func staged(t *testing.T, addr string) (context.Context, *redis.Client, *counting, redis.Scripter) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	rdb.FlushAll(ctx)
	inner := &counting{Client: rdb}
	c := Wrap(inner, rdb)
	if _, ok := c.(*Client); !ok {
		t.Fatal("a *redis.Client was not wrapped")
	}
	return ctx, rdb, inner, c
}

// Calls on many keys at once go in few calls, and each is answered as a
// call of its own: every key's first three pass, the fourth does not, and
// a key of another type fails alone.
func TestBatchesAnswerEachCall(t *testing.T) {
	for name, addr := range servers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, rdb, inner, c := staged(t, addr)
			rdb.LPush(ctx, "wrong", "x")
			const keys, per = 50, 4
			var wg sync.WaitGroup
			allowed := make([]atomic.Int64, keys)
			var wrong atomic.Int64
			for k := range keys {
				for range per {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, err := gcra(ctx, c, fmt.Sprint("k", k), 1)
						if err != nil {
							t.Error(err)
							return
						}
						if r.Decisions[0].Allowed == 1 {
							allowed[k].Add(1)
						}
					}()
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := gcra(ctx, c, "wrong", 1)
					if !errors.Is(err, bindings.ErrWrongType) {
						t.Errorf("a list's call: %v, want WRONGTYPE", err)
					}
					wrong.Add(1)
				}()
			}
			wg.Wait()
			for k := range keys {
				if n := allowed[k].Load(); n != 3 {
					t.Errorf("key k%d: %d of %d allowed, want 3", k, n, per)
				}
			}
			calls := keys * (per + 1)
			sent := inner.sent.Load()
			t.Logf("%d calls in %d commands", calls, sent)
			if sent >= int64(calls) {
				t.Errorf("%d calls in %d commands: no batch formed", calls, sent)
			}
		})
	}
}

// A call that waits behind another and whose caller leaves before its
// batch is sent is never sent: it counts nothing.
func TestLeftBeforeSentCountsNothing(t *testing.T) {
	ctx := context.Background()
	rdb, inner, c, wg := heldAtTheGate(t)
	wctx, cancel := context.WithCancel(ctx)
	left := make(chan error)
	go func() {
		_, err := gcra(wctx, c, "second", 1)
		left <- err
	}()
	m := c.(*Client)
	for waiting(m) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call that left: %v, want context.Canceled", err)
	}
	for range depth {
		inner.gate <- struct{}{}
	}
	wg.Wait()
	if n := rdb.Exists(ctx, "second").Val(); n != 0 {
		t.Error("the call that left before its batch was sent counted")
	}
	if n := inner.sent.Load(); n != depth {
		t.Errorf("%d commands sent, want %d", n, depth)
	}
}

// heldAtTheGate starts depth calls of hold (gcraCall by default) on keys
// "first<i>" on a stage over miniredis and returns once they are in
// flight, held at inner's gate (one value each lets them go); wg is done
// when they have returned.
func heldAtTheGate(t *testing.T, hold ...func(context.Context, redis.Scripter, string) error) (*redis.Client, *counting, redis.Scripter, *sync.WaitGroup) {
	call := gcraCall
	if len(hold) > 0 {
		call = hold[0]
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	if err := bindings.LoadAll(ctx, rdb); err != nil { // one command per call: no NOSCRIPT, then EVAL
		t.Fatal(err)
	}
	inner := &counting{Client: rdb, gate: make(chan struct{})}
	c := Wrap(inner, rdb)
	wg := &sync.WaitGroup{}
	for i := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(ctx, c, fmt.Sprint("first", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	for inner.sent.Load() < depth {
		time.Sleep(time.Millisecond)
	}
	return rdb, inner, c, wg
}

// gcraCall is a call of gcra.lua on key, of cost 1.
func gcraCall(ctx context.Context, c redis.Scripter, key string) error {
	_, err := gcra(ctx, c, key, 1)
	return err
}

// fixedCall is a call of fixed_window.lua on key, of cost 1 against a
// limit of 2 an hour.
func fixedCall(ctx context.Context, c redis.Scripter, key string) error {
	_, err := bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{Limit: 2, Window: time.Hour, Cost: 1})
	return err
}

func waiting(m *Client) (n int) {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for _, ln := range sh.lines {
			n += len(ln.waiting)
		}
		sh.mu.Unlock()
	}
	return n
}

// The form is loaded on demand: a server without it (SCRIPT FLUSH) gets
// EVAL.
func TestFormAfterScriptFlush(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 32})
	defer rdb.Close()
	rdb.ScriptFlush(ctx)
	inner := &counting{Client: rdb, gate: make(chan struct{})}
	c := Wrap(inner, rdb)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := gcra(ctx, c, fmt.Sprint("k", i), 1)
			errs <- err
		}()
	}
	for waiting(c.(*Client)) < 20-depth {
		time.Sleep(time.Millisecond)
	}
	close(inner.gate) // every command goes on
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := rdb.Exists(ctx, "k0", "k19").Val(); n != 2 {
		t.Errorf("%d of 2 keys written", n)
	}
}

// slot agrees with Redis's CLUSTER KEYSLOT (values from its docs and a
// server).
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "hello": 866, "somekey": 11058,
		"{user1000}.following": 3443, "{user1000}.followers": 3443,
		"foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061,
		"rl:api:{alice}": slot("alice"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// Other clients go unwrapped: a Ring shards by key, and an AutoPipeliner
// or another library's client has a node this stage cannot tell.
func TestWrapOnlyWhatItCanRoute(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if c := Wrap(ring, ring); c != redis.Scripter(ring) {
		t.Error("a Ring was wrapped")
	}
}

// A caller whose call is on the wire in a batch leaves at its own
// deadline, as it would leave a call of its own; the batch goes on.
func TestLeftAfterSentReturnsAtOnce(t *testing.T) {
	ctx := context.Background()
	_, inner, c, wg := heldAtTheGate(t)
	wctx, cancel := context.WithCancel(ctx)
	left := make(chan error)
	go func() {
		_, err := gcra(wctx, c, "second", 1)
		left <- err
	}()
	for waiting(c.(*Client)) == 0 {
		time.Sleep(time.Millisecond)
	}
	inner.gate <- struct{}{} // a first call returns, and the second's batch goes, to the gate
	for inner.sent.Load() < depth+1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the call that left: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller waited for its batch past its context")
	}
	for range depth { // the other first call, and the batch
		inner.gate <- struct{}{}
	}
	wg.Wait()
}

// A group whose calls in flight have not returned for longer than stuck (a
// hung node) holds no new call back: it goes as a call of its own, to the
// guard, as it would without the stage.
func TestStuckGroupLetsCallsThrough(t *testing.T) {
	ctx := context.Background()
	_, inner, c, wg := heldAtTheGate(t)
	time.Sleep(stuck + 50*time.Millisecond) // the state asserted: no call returned for longer than stuck
	third := make(chan error, 1)
	go func() {
		_, err := gcra(ctx, c, "third", 1)
		third <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for inner.sent.Load() < depth+1 {
		if time.Now().After(deadline) {
			t.Fatal("a call behind a stuck group waited in its line instead of going on its own")
		}
		time.Sleep(time.Millisecond)
	}
	if n := waiting(c.(*Client)); n != 0 {
		t.Errorf("%d calls wait behind a stuck group", n)
	}
	for range depth + 1 {
		inner.gate <- struct{}{}
	}
	wg.Wait()
	if err := <-third; err != nil {
		t.Error(err)
	}
}

// Each call reads its own answer while waiters are reused: 100 calm callers,
// each on a key of its own, read exactly what their calls left, beside
// 100 impatient callers on other keys that give up after 1 µs to 3 ms, before
// or after their batch is sent. Through GCRA's calls of many keys (join.go)
// and fixed_window.lua's form taken by the script itself; with
// REDLIMIT_SATURATE=1 (make test sets it for this test in a step of its
// own) again with a busy loop on every core, where batches form and callers
// give up at other moments.
func TestEachCallGetsItsOwnAnswer(t *testing.T) {
	loads := []bool{false}
	if os.Getenv("REDLIMIT_SATURATE") == "1" {
		loads = append(loads, true)
	}
	// A fixed window of about three years holds the test: the first of
	// these lengths whose next boundary is more than an hour away (1e11 and
	// 9e10 ms share the boundary of 1.8e12 ms, 2027-01-15 08:00 UTC).
	window := int64(0)
	for _, w := range []int64{1e11, 9e10, 7e10} {
		if now := time.Now().UnixMilli(); w-now%w > time.Hour.Milliseconds() {
			window = w
			break
		}
	}
	if window == 0 {
		t.Fatal("no window length without a boundary within the hour")
	}
	const burst = 10000
	scripts := map[string]func(ctx context.Context, c redis.Scripter, key string, cost int64) (remaining int64, err error){
		"gcra": func(ctx context.Context, c redis.Scripter, key string, cost int64) (int64, error) {
			r, err := bindings.GCRA(ctx, c, []string{key}, bindings.GCRAParams{Burst: burst, Rate: 1, Period: 24 * time.Hour, Take: bindings.GCRATakeAll, // nothing drips back during the test
				Requests: []bindings.GCRARequest{{Cost: cost}}})
			if err != nil {
				return 0, err
			}
			return r.Decisions[0].Remaining, nil
		},
		"fixed_window": func(ctx context.Context, c redis.Scripter, key string, cost int64) (int64, error) {
			r, err := bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{Limit: burst, Window: time.Duration(window) * time.Millisecond, Cost: cost})
			return r.Remaining, err
		},
	}
	for _, busy := range loads {
		for script, call := range scripts {
			for name, addr := range servers(t) {
				if busy {
					name += "/saturated"
				}
				t.Run(script+"/"+name, func(t *testing.T) {
					if busy {
						testredis.Saturate(t)
					}
					ctx, _, inner, c := staged(t, addr)
					const calm, impatient, rounds = 100, 100, 20
					var wg sync.WaitGroup
					for g := range calm {
						wg.Add(1)
						go func() {
							defer wg.Done()
							left := int64(burst)
							for r := range rounds {
								cost := int64(1 + (g*rounds+r)%97)
								got, err := call(ctx, c, fmt.Sprint("calm", g), cost)
								if err != nil {
									t.Error(err)
									return
								}
								left -= cost
								if got != left {
									t.Errorf("calm%d, call %d: %d remaining, want %d", g, r, got, left)
									return
								}
							}
						}()
					}
					var gaveUp atomic.Int64
					for g := range impatient {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for r := range rounds {
								ctx, cancel := context.WithTimeout(ctx, time.Duration(1+(g*rounds+r)*37%3000)*time.Microsecond)
								_, err := call(ctx, c, fmt.Sprint("impatient", g), 1)
								cancel()
								if err != nil {
									var ne net.Error
									if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, bindings.ErrExpired) && !(errors.As(err, &ne) && ne.Timeout()) {
										t.Errorf("an impatient call: %v", err)
									}
									gaveUp.Add(1)
								}
							}
						}()
					}
					wg.Wait()
					t.Logf("%d calls in %d commands; %d impatient calls gave up", (calm+impatient)*rounds, inner.sent.Load(), gaveUp.Load())
				})
			}
		}
	}
}

// A sliding log's calls weigh the members they may log: six calls of 4 000
// units on other keys, waiting together, go two by two (8 000 of the
// 10 000 one call may log), each admitted and logged in full.
func TestSlidingLogBatchesByWork(t *testing.T) {
	ctx := context.Background()
	logged := func(ctx context.Context, c redis.Scripter, key string, cost int64) error {
		r, err := bindings.SlidingWindowLog(ctx, c, key, bindings.SlidingWindowLogParams{Limit: 10000, Window: time.Minute, Cost: cost})
		if err == nil && !r.Allowed {
			err = fmt.Errorf("%s: %d units denied", key, cost)
		}
		return err
	}
	rdb, inner, c, wg := heldAtTheGate(t, func(ctx context.Context, c redis.Scripter, key string) error { return logged(ctx, c, key, 1) })
	// The form, so that no batch meets NOSCRIPT and is sent twice.
	if err := bindings.MultiKeyForm(slidingLog).Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	const big = 6
	for i := range big {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := logged(ctx, c, fmt.Sprint("big", i), 4000); err != nil {
				t.Error(err)
			}
		}()
	}
	for waiting(c.(*Client)) < big {
		time.Sleep(time.Millisecond)
	}
	close(inner.gate)
	wg.Wait()
	if n := inner.sent.Load(); n != depth+big/2 {
		t.Errorf("%d calls of 4 000 units went in %d commands, want %d (two a batch)", big, n-depth, big/2)
	}
	for i := range big {
		if n := rdb.ZCard(ctx, fmt.Sprint("big", i)).Val(); n != 4000 {
			t.Errorf("big%d logs %d members, want 4000", i, n)
		}
	}
}

// Calls of gcra.lua of one key and one request join into one call of the
// script itself, one per limit (not its form): two limits' calls on 30
// keys, and a key twice, go in one call per limit and one more for the
// second call of that key; each is answered as a call of its own.
func TestOneLimitsCallsJoin(t *testing.T) {
	ctx := context.Background()
	rdb, inner, c, wg := heldAtTheGate(t)
	var sentMu sync.Mutex
	var sent []string // each command's script and key count
	inner.seen = func(args []any) {
		sentMu.Lock()
		defer sentMu.Unlock()
		script := "form"
		if args[1] == bindings.GCRAScript.Hash() {
			script = "gcra.lua"
		}
		sent = append(sent, fmt.Sprint(script, " ", args[2]))
	}
	limits := []bindings.GCRAParams{
		{Burst: 2, Rate: 2, Period: time.Hour, Take: bindings.GCRATakeAll},
		{Burst: 5, Rate: 5, Period: time.Hour, Take: bindings.GCRATakeAll},
	}
	type answer struct {
		key string
		d   bindings.GCRADecision
		err error
	}
	answers := make(chan answer, 31)
	var calls sync.WaitGroup
	call := func(key string, p bindings.GCRAParams) {
		calls.Add(1)
		go func() {
			defer calls.Done()
			p.Requests = []bindings.GCRARequest{{Cost: 1}}
			r, err := bindings.GCRA(ctx, c, []string{key}, p)
			a := answer{key: key, err: err}
			if err == nil {
				a.d = r.Decisions[0]
			}
			answers <- a
		}()
	}
	for i := range 30 {
		call(fmt.Sprint("k", i), limits[i%2])
	}
	for waiting(c.(*Client)) < 30 {
		time.Sleep(time.Millisecond)
	}
	call("k0", limits[0]) // k0 twice
	for waiting(c.(*Client)) < 31 {
		time.Sleep(time.Millisecond)
	}
	close(inner.gate)
	calls.Wait()
	wg.Wait()
	close(answers)
	k0 := 0
	for a := range answers {
		if a.err != nil {
			t.Fatalf("%s: %v", a.key, a.err)
		}
		l := limits[0]
		if a.key != "k0" && a.key[len(a.key)-1]%2 == 1 {
			l = limits[1]
		}
		// Each key's first call passes and leaves burst-1, and the key
		// full again after one interval; k0's second leaves none, full
		// again a little less than two intervals on (it ran later).
		want := bindings.GCRADecision{Allowed: 1, Remaining: l.Burst - 1, ResetAfter: l.Period / time.Duration(l.Rate)}
		if a.key == "k0" {
			k0++
			if a.d.Remaining == 0 && a.d.ResetAfter > want.ResetAfter && a.d.ResetAfter <= 2*want.ResetAfter {
				want.Remaining, want.ResetAfter = 0, a.d.ResetAfter
			}
		}
		if a.d != want {
			t.Errorf("%s: %+v, want %+v", a.key, a.d, want)
		}
	}
	if k0 != 2 {
		t.Errorf("k0 answered %d times", k0)
	}
	sentMu.Lock()
	defer sentMu.Unlock()
	slices.Sort(sent)
	// The two held at the gate, k0's second, and one call per limit.
	if want := []string{"gcra.lua 1", "gcra.lua 1", "gcra.lua 1", "gcra.lua 15", "gcra.lua 15"}; !slices.Equal(sent, want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
	if n := rdb.Exists(ctx, "k0", "k29").Val(); n != 2 {
		t.Errorf("%d of 2 keys written", n)
	}
}

// TestItselfTakesTheForm: waiting calls of fixed_window.lua, which takes
// its multi-key form's layout itself, go as one call of the script, not of
// luagen's form: calls of two limits and a key twice together, each
// caller with its exact answer.
func TestItselfTakesTheForm(t *testing.T) {
	ctx := context.Background()
	rdb, inner, c, wg := heldAtTheGate(t, fixedCall)
	var sentMu sync.Mutex
	var sent []string // each command's script and key count
	inner.seen = func(args []any) {
		sentMu.Lock()
		defer sentMu.Unlock()
		script := "form"
		if args[1] == bindings.FixedWindowScript.Hash() {
			script = "fixed_window.lua"
		}
		sent = append(sent, fmt.Sprint(script, " ", args[2]))
	}
	type answer struct {
		key   string
		limit int64
		r     bindings.FixedWindowResult
		err   error
	}
	answers := make(chan answer, 21)
	var calls sync.WaitGroup
	call := func(key string, limit int64) {
		calls.Add(1)
		go func() {
			defer calls.Done()
			r, err := bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{Limit: limit, Window: time.Hour, Cost: 1})
			answers <- answer{key, limit, r, err}
		}()
	}
	for i := range 20 {
		call(fmt.Sprint("k", i), int64(2+i%2))
	}
	for waiting(c.(*Client)) < 20 {
		time.Sleep(time.Millisecond)
	}
	call("k0", 2) // k0 twice
	for waiting(c.(*Client)) < 21 {
		time.Sleep(time.Millisecond)
	}
	close(inner.gate)
	calls.Wait()
	wg.Wait()
	close(answers)
	var k0 []int64
	for a := range answers {
		if a.err != nil {
			t.Fatalf("%s: %v", a.key, a.err)
		}
		if a.key == "k0" {
			k0 = append(k0, a.r.Remaining)
			continue
		}
		if !a.r.Allowed || a.r.Remaining != a.limit-1 {
			t.Errorf("%s (limit %d): %+v, want allowed with %d left", a.key, a.limit, a.r, a.limit-1)
		}
	}
	slices.Sort(k0)
	if !slices.Equal(k0, []int64{0, 1}) {
		t.Errorf("k0 answered remaining %v, want 1 then 0", k0)
	}
	sentMu.Lock()
	defer sentMu.Unlock()
	slices.Sort(sent)
	// The two held at the gate, then the 21 waiting calls in one.
	if want := []string{"fixed_window.lua 1", "fixed_window.lua 1", "fixed_window.lua 21"}; !slices.Equal(sent, want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
	if n := rdb.Exists(ctx, "k0", "k19").Val(); n != 2 {
		t.Errorf("%d of 2 keys written", n)
	}
}

// A batch's calls on one key go together, in the order they came, so the
// script reads and writes that key once: a hot key's calls among calm
// keys' (h a h b h c) go as h h h a b c, and h's callers are answered in
// the order they came (its limit of 2 denies the third).
func TestRunsGoTogether(t *testing.T) {
	ctx := context.Background()
	_, inner, c, wg := heldAtTheGate(t, fixedCall)
	var sentMu sync.Mutex
	var batches [][]any // the keys of each call of many
	inner.seen = func(args []any) {
		sentMu.Lock()
		defer sentMu.Unlock()
		if n := args[2].(int); n > 1 {
			batches = append(batches, args[3:3+n])
		}
	}
	order := []string{"h", "a", "h", "b", "h", "c"}
	got := make([]bindings.FixedWindowResult, len(order))
	var calls sync.WaitGroup
	for i, key := range order {
		calls.Add(1)
		go func() {
			defer calls.Done()
			r, err := bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{Limit: 2, Window: time.Hour, Cost: 1})
			if err != nil {
				t.Errorf("call %d on %s: %v", i, key, err)
			}
			got[i] = r
		}()
		for waiting(c.(*Client)) < i+1 { // one at a time: the order they came
			time.Sleep(time.Millisecond)
		}
	}
	close(inner.gate)
	calls.Wait()
	wg.Wait()
	sentMu.Lock()
	defer sentMu.Unlock()
	if want := []any{"h", "h", "h", "a", "b", "c"}; len(batches) != 1 || !slices.Equal(batches[0], want) {
		t.Errorf("batches sent with keys %v, want one with %v", batches, want)
	}
	want := map[int]bindings.FixedWindowResult{0: {Allowed: true, Remaining: 1}, 2: {Allowed: true, Remaining: 0}, 4: {Allowed: false, Remaining: 0}}
	for i, key := range order {
		r := got[i]
		if w, ok := want[i]; ok {
			if r.Allowed != w.Allowed || r.Remaining != w.Remaining {
				t.Errorf("h's call %d: allowed %v with %d left, want %v with %d", i/2+1, r.Allowed, r.Remaining, w.Allowed, w.Remaining)
			}
		} else if !r.Allowed || r.Remaining != 1 {
			t.Errorf("%s: allowed %v with %d left, want allowed with 1", key, r.Allowed, r.Remaining)
		}
	}
}
