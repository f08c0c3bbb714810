// Package scriptingtest holds the tests every redis.Scripter over another
// client (clients/rueidis, clients/valkey) must pass on a real
// redis-server and a Redis Cluster: the same replies and errors as
// go-redis's own client, NOSCRIPT after SCRIPT FLUSH, deadlines, routing by
// the first key, every scenario table through ratelimit and the bindings,
// and exact counts under concurrency; and the paced callers of the fault
// tests (Paced).
package scriptingtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/tests/tier"
)

// Open returns a Scripter over the adapter's client of the servers at
// addrs (one address, or a cluster's nodes), closed when t ends. It is a
// ratelimit.Client, so the adapter's type is held to what a Limiter
// calls.
type Open func(t testing.TB, addrs []string) ratelimit.Client

// Run runs every test of the suite, each a subtest of t, on a redis-server
// and a cluster of their own.
func Run(t *testing.T, open Open) {
	addr := redisserver.Start(t)
	ref := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { ref.Close() })
	s := open(t, []string{addr})

	t.Run("Replies", func(t *testing.T) { replies(t, s, ref) })
	t.Run("Arguments", func(t *testing.T) { arguments(t, s, ref) })
	t.Run("Process", func(t *testing.T) { process(t, s, ref) })
	t.Run("NoScript", func(t *testing.T) { noScript(t, s, ref) })
	t.Run("Deadline", func(t *testing.T) { deadline(t, s, ref) })
	t.Run("Concurrency", func(t *testing.T) { concurrency(t, s) })
	t.Run("Coalescing", func(t *testing.T) { Coalescing(t, s, ref) })
	t.Run("Scenarios", func(t *testing.T) {
		tier.Run(t, tier.Tier{Name: "standalone", Scripts: s, State: ref})
	})
	t.Run("Cluster", func(t *testing.T) {
		addrs := redisserver.NewCluster(t)
		cref := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { cref.Close() })
		cs := open(t, addrs)
		t.Run("Routing", func(t *testing.T) { routing(t, cs, addrs) })
		t.Run("Concurrency", func(t *testing.T) { concurrency(t, cs) })
		t.Run("Coalescing", func(t *testing.T) { Coalescing(t, cs, nil) })
		t.Run("Scenarios", func(t *testing.T) {
			tier.Run(t, tier.Tier{Name: "cluster", Scripts: cs, State: cref})
		})
	})
}

// outcome is a reply as a caller sees it: the value, and the error's text
// and whether it is a redis.Error (an error element inside an array too).
type outcome struct {
	Val      any
	Err      string
	RedisErr bool
}

func outcomeOf(cmd *redis.Cmd) outcome {
	v, err := cmd.Result()
	o := outcome{Val: plain(v)}
	if err != nil {
		var re redis.Error
		o.Err, o.RedisErr = err.Error(), errors.As(err, &re)
	}
	return o
}

// plain replaces error elements by their text and kind, which cmp can
// compare across error types.
func plain(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	case error:
		var re redis.Error
		return outcome{Err: v.Error(), RedisErr: errors.As(v, &re)}
	}
	return v
}

// replies: every kind of reply a script can send, from s and from
// go-redis's own client, must read the same.
func replies(t *testing.T, s redis.Scripter, ref *redis.Client) {
	ctx := context.Background()
	if err := ref.Set(ctx, "replies:string", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"return 42",
		"return -9007199254740991",
		"return 3.99",
		"return 'hello'",
		"return ''",
		"return ARGV[1]",
		"return nil",
		"return false",
		"return true",
		"return {}",
		"return {1, 'two', {3, {4, {}}}, -5}",
		"return {1, nil, 3}",
		"return {1, false, 3}",
		"return {ok = 'OK'}",
		"return redis.status_reply('QUEUED')",
		"return {1, {ok = 'fine'}}",
		"return redis.error_reply('BADARG cost must be an integer')",
		"return {err = 'BADSTATE the key holds something else'}",
		"return {1, redis.error_reply('INNER an error inside an array'), 3}",
		"error('boom')",
		"return redis.call('INCR', KEYS[1])",
		"return redis.call('HGET', KEYS[1], 'f')",
		"return redis.call('NOSUCHCOMMAND')",
		"local t = {} for i = 1, 1000 do t[i] = i end return t",
		"return string.rep('x', 100000)",
	} {
		keys := []string{"replies:string"}
		args := []any{"bin\x00\xff\r\nary"}
		want := outcomeOf(ref.Eval(ctx, src, keys, args...))
		got := outcomeOf(s.Eval(ctx, src, keys, args...))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("EVAL %q: go-redis (-) vs the adapter (+):\n%s", src, diff)
		}
		// The same through EVALSHA and the _RO commands (a write refused).
		sha := redis.NewScript(src).Hash()
		for name, f := range map[string]func(redis.Scripter) *redis.Cmd{
			"EVALSHA":    func(c redis.Scripter) *redis.Cmd { return c.EvalSha(ctx, sha, keys, args...) },
			"EVAL_RO":    func(c redis.Scripter) *redis.Cmd { return c.EvalRO(ctx, src, keys, args...) },
			"EVALSHA_RO": func(c redis.Scripter) *redis.Cmd { return c.EvalShaRO(ctx, sha, keys, args...) },
		} {
			want, got := outcomeOf(f(ref)), outcomeOf(f(s))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %q: go-redis (-) vs the adapter (+):\n%s", name, src, diff)
			}
		}
	}
	// The answers that matter most, said outright.
	if err := s.Eval(ctx, "return nil", nil).Err(); err != redis.Nil {
		t.Errorf("a nil reply: %v, want redis.Nil", err)
	}
	err := s.Eval(ctx, "return redis.error_reply('BADARG x')", nil).Err()
	if !redis.HasErrorPrefix(err, "BADARG") {
		t.Errorf("an error reply: %v (%T), want a redis.Error with prefix BADARG", err, err)
	}
	err = s.Eval(ctx, "error('boom')", nil).Err()
	if !strings.HasPrefix(fmt.Sprint(err), "ERR ") {
		t.Errorf("a script error: %q, want the server's text with its ERR", err)
	}
}

// binary is an encoding.BinaryMarshaler.
type binary struct{}

func (binary) MarshalBinary() ([]byte, error) { return []byte("marshalled"), nil }

// arguments: every kind of argument go-redis writes reaches the script as
// go-redis writes it.
func arguments(t *testing.T, s redis.Scripter, ref *redis.Client) {
	ctx := context.Background()
	n := 7
	cases := [][]any{
		{"s", []byte("b"), 1, int8(-8), int16(-16), int32(-32), int64(-64), uint(1), uint8(8), uint16(16), uint32(32), uint64(1<<64 - 1)},
		{1.5, float32(0.1), 1e21, -0.0, true, false, nil, &n},
		{1500 * time.Millisecond, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), binary{}},
		{[]string{"flattened", "strings"}},
		{[]any{"flattened", 2, 3.5}},
		{[]string{"not flattened"}, "second"},
	}
	for _, args := range cases {
		want := outcomeOf(ref.Eval(ctx, "return ARGV", nil, args...))
		got := outcomeOf(s.Eval(ctx, "return ARGV", nil, args...))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ARGV %#v: go-redis (-) vs the adapter (+):\n%s", args, diff)
		}
	}
	// What go-redis flattens by reflection (maps, structs) the adapter
	// refuses before sending, rather than sending something else.
	for _, arg := range []any{map[string]any{"a": 1}, struct{ A int }{1}} {
		if err := s.Eval(ctx, "return ARGV", nil, arg).Err(); err == nil || !strings.Contains(err.Error(), "can't marshal") {
			t.Errorf("ARGV %#v: %v, want an error before sending", arg, err)
		}
	}
}

// process: the bindings send a script call as a *redis.Cmd through the
// client's Process, where it has one, so that the call is not copied into
// a new command. The adapter's replies read as go-redis's for EVAL,
// EVALSHA and their _RO forms, with keys and without, NOSCRIPT included,
// and it refuses any other command, sending nothing.
func process(t *testing.T, s redis.Scripter, ref *redis.Client) {
	ctx := context.Background()
	p, ok := s.(interface {
		Process(context.Context, redis.Cmder) error
	})
	if !ok {
		t.Fatalf("%T has no Process: the bindings copy every call into a new command", s)
	}
	for _, src := range []string{
		"return {KEYS[1] or 'no key', ARGV[1], ARGV[2]}",
		"return redis.call('SET', KEYS[1] or 'process:k', 'v')", // refused by the _RO forms
		"return redis.error_reply('BADARG x')",
		"return nil",
	} {
		sha := redis.NewScript(src).Hash()
		if err := ref.ScriptLoad(ctx, src).Err(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "EVALSHA"} {
			body := src
			if strings.Contains(strings.ToLower(name), "sha") {
				body = sha
			}
			for _, keys := range [][]any{{"process:k"}, nil} {
				args := append(append([]any{name, body, len(keys)}, keys...), "a", int64(1234567))
				want, got := redis.NewCmd(ctx, args...), redis.NewCmd(ctx, args...)
				_ = ref.Process(ctx, want)
				if err := p.Process(ctx, got); err != got.Err() {
					t.Errorf("%s %q: Process returned %v, the command holds %v", name, src, err, got.Err())
				}
				if diff := cmp.Diff(outcomeOf(want), outcomeOf(got)); diff != "" {
					t.Errorf("%s %q, keys %v: go-redis (-) vs the adapter (+):\n%s", name, src, keys, diff)
				}
			}
		}
	}
	noSuch := redis.NewCmd(ctx, "evalsha", "0000000000000000000000000000000000000000", 0)
	if err := p.Process(ctx, noSuch); !redis.HasErrorPrefix(err, "NOSCRIPT") {
		t.Errorf("EVALSHA of an unknown script through Process: %v, want NOSCRIPT", err)
	}
	for _, cmd := range []redis.Cmder{
		redis.NewCmd(ctx, "set", "process:refused", "x"),
		redis.NewCmd(ctx, "eval"),
		redis.NewStringCmd(ctx, "eval", "return redis.call('SET', 'process:refused', 'x')", 0),
	} {
		if err := p.Process(ctx, cmd); err == nil || cmd.Err() != err {
			t.Errorf("Process(%T %v) = %v, want an error, held by the command too", cmd, cmd.Args(), err)
		}
	}
	if n, err := ref.Exists(ctx, "process:refused").Result(); err != nil || n != 0 {
		t.Errorf("a refused command was sent: EXISTS %d, %v", n, err)
	}
}

// noScript: after SCRIPT FLUSH, EVALSHA answers NOSCRIPT as a redis.Error,
// redis.Script.Run falls back to EVAL, and the bindings and ratelimit go on.
func noScript(t *testing.T, s ratelimit.Client, ref *redis.Client) {
	ctx := context.Background()
	const src = "return 'ran ' .. ARGV[1]"
	script := redis.NewScript(src)
	sha, err := s.ScriptLoad(ctx, src).Result()
	if err != nil || sha != script.Hash() {
		t.Fatalf("SCRIPT LOAD: %q, %v; want %s", sha, err, script.Hash())
	}
	if got, err := s.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result(); err != nil || !cmp.Equal(got, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS: %v, %v; want [true false]", got, err)
	}
	l, err := ratelimit.New(s, "noscript", ratelimit.PerMinute(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := ref.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	err = s.EvalSha(ctx, sha, nil, "x").Err()
	var re redis.Error
	if !redis.HasErrorPrefix(err, "NOSCRIPT") || !errors.As(err, &re) {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %v (%T), want a NOSCRIPT redis.Error", err, err)
	}
	if got, err := s.ScriptExists(ctx, sha).Result(); err != nil || got[0] {
		t.Fatalf("SCRIPT EXISTS after SCRIPT FLUSH: %v, %v", got, err)
	}
	if got, err := script.Run(ctx, s, nil, "again").Result(); err != nil || got != "ran again" {
		t.Fatalf("Script.Run after SCRIPT FLUSH: %v, %v", got, err)
	}
	d, err := l.Allow(ctx, "k")
	if err != nil || !d.Allowed || d.Remaining != 8 {
		t.Fatalf("ratelimit after SCRIPT FLUSH: %+v, %v; want allowed, 8 remaining", d, err)
	}
	one := bindings.GCRAParams{Burst: 1, Rate: 1, Period: time.Minute, Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 1}}}
	r, err := bindings.GCRA(ctx, s, []string{"noscript:{gcra}"}, one)
	if err != nil || r.Decisions[0].Allowed != 1 {
		t.Fatalf("bindings.GCRA after SCRIPT FLUSH: %+v, %v", r, err)
	}
	// An error code the script declares comes back as the bindings'
	// sentinel, through the adapter's error replies.
	if err := ref.Set(ctx, "noscript:{bad}", "not a state", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = bindings.GCRA(ctx, s, []string{"noscript:{bad}"}, one)
	if !errors.Is(err, bindings.ErrBadState) {
		t.Fatalf("bindings.GCRA on a foreign string: %v, want ErrBadState", err)
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatalf("Reset (DEL through the adapter): %v", err)
	}
	if d, err := l.Peek(ctx, "k"); err != nil || d.Remaining != 10 {
		t.Fatalf("after Reset: %+v, %v; want 10 remaining", d, err)
	}
}

// deadline: a context's deadline ends the wait for a reply that does not
// come (a paused server), a cancelled context sends nothing, and the
// client works again afterwards.
func deadline(t *testing.T, s redis.Scripter, ref *redis.Client) {
	ctx := context.Background()
	if err := s.Eval(ctx, "return 1", nil).Err(); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Eval(cancelled, "return redis.call('INCR', KEYS[1])", []string{"deadline:cancelled"}).Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v, want context.Canceled", err)
	}
	if n, err := ref.Exists(ctx, "deadline:cancelled").Result(); err != nil || n != 0 {
		t.Errorf("a call with a cancelled context ran: EXISTS %d, %v", n, err)
	}

	const pause = 2 * time.Second
	if err := ref.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Eval(short, "return 1", nil).Err()
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a paused server and a 200 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	if took > pause/2 {
		t.Errorf("a 200 ms deadline returned after %v: it waited for the server", took)
	}
	// Once the pause ends (CLIENT UNPAUSE would wait for it too), the same
	// client answers.
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := s.Eval(long, "return 2", nil).Result(); err != nil || got != int64(2) {
		t.Errorf("after the pause (%v): %v, %v", time.Since(paused), got, err)
	}
}

// concurrency: 64 goroutines on one hot key admit exactly the burst, for
// every algorithm, with no error.
func concurrency(t *testing.T, s ratelimit.Client) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for alg := ratelimit.GCRA; alg <= ratelimit.SlidingWindowCounter; alg++ {
		l, err := ratelimit.New(s, run+"-"+alg.String(), ratelimit.PerMinute(100), ratelimit.WithAlgorithm(alg))
		if err != nil {
			t.Fatal(err)
		}
		var allowed, failed atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		for g := 0; g < 64; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					d, err := l.Allow(context.Background(), "hot")
					switch {
					case err != nil:
						failed.Add(1)
						first.CompareAndSwap(nil, err.Error())
					case d.Allowed:
						allowed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if allowed.Load() != 100 || failed.Load() != 0 {
			t.Errorf("%v: %d of 256 allowed, %d failed (first: %v); want 100, 0", alg, allowed.Load(), failed.Load(), first.Load())
		}
	}
}

// Coalescing: ratelimit's batches of a hot key's requests go through s, a
// client or an adapter: 64 goroutines' 512 requests of costs 1 to 3, with
// a limit that changes halfway (WithLimit), admit exactly what the burst
// holds, for GCRA and the token bucket; on a single server (ref, nil for a
// cluster) in fewer calls than requests.
func Coalescing(t *testing.T, s ratelimit.Client, ref *redis.Client) {
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket} {
		l, err := ratelimit.New(s, run+"-c-"+alg.String(), ratelimit.Per(300, time.Hour), ratelimit.WithAlgorithm(alg))
		if err != nil {
			t.Fatal(err)
		}
		half, _ := l.WithLimit(ratelimit.Per(300, time.Hour).WithBurst(200))
		calls := func() float64 {
			if ref == nil {
				return 0
			}
			info, err := ref.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			var n float64
			for _, line := range strings.Split(info, "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
					n, _ = strconv.ParseFloat(strings.Split(rest, ",")[0], 64)
				}
			}
			return n
		}
		before := calls()
		var admitted, failed atomic.Int64
		var first atomic.Value
		// Two rounds of 64 goroutines: the full burst's, then the lowered
		// one's. (Mixed in one round, a lowered-burst request that comes
		// early clamps a token bucket's stored tokens to 200, as it should,
		// and the total depends on the interleaving.)
		for round, lim := range []*ratelimit.Limiter{l, half} {
			var wg sync.WaitGroup
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 4 * round; i < 4*round+4; i++ {
						cost := int64(1 + (g+i)%3)
						d, err := lim.AllowN(ctx, "hot", cost)
						switch {
						case err != nil:
							failed.Add(1)
							first.CompareAndSwap(nil, err.Error())
						case d.Allowed:
							admitted.Add(cost)
						}
					}
				}()
			}
			wg.Wait()
		}
		// The first round's requests alone (cost 512 in all) fill the burst
		// of 300 to within a cost of 3; the lowered burst admits only what
		// the key's state leaves room for under 200; a refill of one per
		// 12 s adds at most one while the test runs.
		d, err := l.Peek(ctx, "hot")
		if err != nil || failed.Load() != 0 {
			t.Fatalf("%v: %d failed (first %v), peek %v, %v", alg, failed.Load(), first.Load(), d, err)
		}
		if n := admitted.Load(); n > 300 || n+d.Remaining > 301 || n < 298 {
			t.Errorf("%v: %d admitted, %d left of a burst of 300", alg, n, d.Remaining)
		}
		if ref != nil {
			if n := calls() - before; n >= 512 {
				t.Errorf("%v: %.0f calls for 512 requests: no batch went through the adapter", alg, n)
			}
		}
	}
}

// routing: on a cluster every script goes to the node that owns its first
// key (no node redirects one), keys of several slots meet CROSSSLOT, and
// SCRIPT LOAD reaches every node.
func routing(t *testing.T, s redis.Scripter, addrs []string) {
	ctx := context.Background()
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
	}
	const src = "return redis.call('INCR', KEYS[1])"
	sha, err := s.ScriptLoad(ctx, src).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if got, err := n.ScriptExists(ctx, sha).Result(); err != nil || !got[0] {
			t.Fatalf("SCRIPT LOAD through the adapter: node %s has it: %v, %v", n.Options().Addr, got, err)
		}
	}
	rejected := func() (sum int64) {
		for _, n := range nodes {
			info, err := n.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(info, "\n") {
				if !strings.HasPrefix(line, "cmdstat_evalsha:") {
					continue
				}
				for _, f := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_evalsha:")), ",") {
					if v, ok := strings.CutPrefix(f, "rejected_calls="); ok {
						k, _ := strconv.ParseInt(v, 10, 64)
						sum += k
					}
				}
			}
		}
		return sum
	}
	before := rejected()
	for i := 0; i < 200; i++ {
		key := fmt.Sprintf("routing:%d", i)
		if got, err := s.EvalSha(ctx, sha, []string{key}).Int64(); err != nil || got != 1 {
			t.Fatalf("EVALSHA on %s: %v, %v", key, got, err)
		}
	}
	if n := rejected() - before; n != 0 {
		t.Errorf("%d of 200 EVALSHA calls were redirected: the adapter does not route by the first key", n)
	}
	// Keys of two slots are the script's error, as through go-redis: never
	// a panic, and nothing runs.
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("routing:%d", i)
		got, err := s.EvalSha(ctx, sha, []string{key, "{other}" + key}).Result()
		if !redis.HasErrorPrefix(err, "CROSSSLOT") {
			t.Fatalf("keys %s and {other}%s: %v, %v; want CROSSSLOT", key, key, got, err)
		}
	}
	if got, err := s.ScriptExists(ctx, sha).Result(); err != nil || !got[0] {
		t.Errorf("SCRIPT EXISTS on the cluster: %v, %v", got, err)
	}
}
