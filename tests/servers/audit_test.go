package servers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlimit/redlimit/tests/scenario"
)

// cli runs redis-cli against the real standalone server.
type cli struct {
	t    *testing.T
	bin  string
	host string
	port string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	needReal(t)
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli is not on PATH")
	}
	host, port, _ := strings.Cut(standaloneAddr, ":")
	return &cli{t: t, bin: bin, host: host, port: port}
}

// run sends one command line and returns redis-cli's output, error
// replies included (redis-cli prints them either way).
func (c *cli) run(args ...string) string {
	c.t.Helper()
	out, _ := exec.Command(c.bin, append([]string{"-h", c.host, "-p", c.port}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// eval runs lua/<script>.lua with redis-cli --eval, as issue 8 did: args
// are the limit, the cost and the clock, and a deadline of 0 (none) goes
// after them, the audits' calls having none. A batch script (gcra,
// token_bucket) gets them in its own layout, as one request (gcra's take
// all).
func (c *cli) eval(script, key string, args ...any) string {
	c.t.Helper()
	if scenario.SpecOf(script).Batch {
		n := len(args)
		lim, cost, now := args[:n-2], args[n-2], args[n-1]
		word := any("all")
		if len(lim) == 4 {
			word = lim[3]
		}
		return c.evalRaw(script, key, lim[0], lim[1], lim[2], now, word, cost, 0)
	}
	return c.evalRaw(script, key, append(args, 0)...)
}

// evalRaw is eval with exactly args.
func (c *cli) evalRaw(script, key string, args ...any) string {
	c.t.Helper()
	argv := []string{"--eval", filepath.Join("..", "..", "lua", script+".lua"), key, ","}
	for _, a := range args {
		argv = append(argv, fmt.Sprint(a))
	}
	return c.run(argv...)
}

func (c *cli) time() int64 {
	c.t.Helper()
	var s, us int64
	if _, err := fmt.Sscan(c.run("TIME"), &s, &us); err != nil {
		c.t.Fatal(err)
	}
	return s*1e6 + us
}

func fields(s string) string { return strings.Join(strings.Fields(s), " ") }

func (c *cli) want(what, got, want string) {
	c.t.Helper()
	if !strings.Contains(fields(got), want) {
		c.t.Errorf("%s: redis-cli printed %q, want %q in it", what, fields(got), want)
	}
}

// TestAuditWithRedisCLI replays issue 8's cases as the audit ran them, with
// redis-cli --eval on a real server, and wants each of them fixed.
func TestAuditWithRedisCLI(t *testing.T) {
	c := newCLI(t)
	k := func(n string) string { return fmt.Sprintf("audit:%s:%d", n, time.Now().UnixNano()) }

	// 1. A caller clock inside now <= 2^52 but decades ahead.
	key := k("1")
	c.want("1: 2^52", c.eval("token_bucket", key, 10, 5, 1000, "smooth", 10, 4503599627370496), "BADARG now must be 0 (the server's clock) or within 60000000 µs")
	c.want("1: then the server's clock", c.eval("token_bucket", key, 10, 5, 1000, "smooth", 1, 0), "1 9 0 200")
	// At most the 200 ms the bucket takes to refill; a redis-cli started
	// on a loaded machine may find the key already gone (-2), which locks
	// nothing either.
	if p, err := strconv.Atoi(c.run("PTTL", key)); err != nil || p > 200 || (p < 1 && p != -2) {
		t.Errorf("1: PTTL %d ms (%v), want at most 200", p, err)
	}

	// 2. A caller clock of 1 µs.
	key = k("2")
	c.want("2: server clock", c.eval("fixed_window", key, 10, 1000, 1, 0), "1 9 0")
	c.want("2: now = 1", c.eval("fixed_window", key, 10, 1000, 1, 1), "BADARG now must be 0 (the server's clock) or within 60000000 µs")

	// 3. A window of 1 s, then of 60 s, with the server's clock. Away from
	// a minute's end, so the six calls share one 60 s window. The first
	// call carries the server's own TIME as a caller clock: with 0 its key
	// would last only to the end of its 1 s window, and a slow redis-cli
	// could find it gone; a caller clock's write keeps it 60 s more.
	for (c.time()/1e6)%60 >= 55 {
		time.Sleep(time.Second)
	}
	key = k("3")
	c.want("3: 5 per 1 s", c.eval("fixed_window", key, 5, 1000, 1, c.time()), "1 4 0")
	for i := 3; i >= 0; i-- {
		c.want("3: 5 per 60 s", c.eval("fixed_window", key, 5, 60000, 1, 0), fmt.Sprintf("1 %d 0", i))
	}
	var ok, rem, retry, reset int64
	if _, err := fmt.Sscan(c.eval("fixed_window", key, 5, 60000, 1, 0), &ok, &rem, &retry, &reset); err != nil || ok != 0 || retry > 60000 || reset > 60000 || retry < 1 {
		t.Errorf("3: the 6th call answered %d %d %d %d (%v); want a denial within 60 s", ok, rem, retry, reset, err)
	}

	// 4. A credit that doubles round up: the bucket was drained
	// 12890000009 µs before the call, at 9999999 per day.
	key = k("4")
	now := c.time()
	// The audit wrote the hash {tokens, ts}; the state is '-<ts><tokens>' now.
	c.run("SET", key, scenario.TokenBucketState(now-12890000009, 0), "PX", "86400000")
	c.want("4: 1491898 tokens", c.eval("token_bucket", key, 10000000, 9999999, 86400000, "smooth", 1491898, now), "0 1491897 1")
	c.want("4: a peek", c.eval("token_bucket", key, 10000000, 9999999, 86400000, "smooth", 0, now), "1 1491897 0")

	// 5. A late caller's retry_after.
	for _, script := range []string{"token_bucket", "leaky_bucket", "sliding_window_log"} {
		key = k("5" + script)
		lim := map[string][]any{"token_bucket": {1, 1, 1000, "smooth"}, "leaky_bucket": {1, 1, 1000}, "sliding_window_log": {1, 1000}}[script]
		t0 := c.time()
		c.want("5: "+script+" at +10 s", c.eval(script, key, append(lim, 1, t0+10e6)...), "1 0 0 1000")
		c.want("5: "+script+" late, at +9 s", c.eval(script, key, append(lim, 1, t0+9e6)...), "0 0 2000 2000")
		c.want("5: "+script+" at its own +9 s + 1000 ms", c.eval(script, key, append(lim, 1, t0+10e6)...), "0 0 1000 1000")
		c.want("5: "+script+" at its own +9 s + 2000 ms", c.eval(script, key, append(lim, 1, t0+11e6)...), "1 0 0 1000")
	}

	// 6. Foreign data. The four scripts that kept a hash then keep one
	// string now: the audit's hash is another type to them, and a string
	// that is not their state is what they refuse as BADSTATE.
	key = k("6h")
	c.run("HSET", key, "name", "alice")
	skey := k("6t")
	c.run("SET", skey, "alice")
	for _, script := range []string{"token_bucket", "leaky_bucket", "fixed_window", "sliding_window_counter"} {
		lim := map[string][]any{"token_bucket": {10, 5, 1000, "smooth"}, "leaky_bucket": {10, 5, 1000}}[script]
		if lim == nil {
			lim = []any{10, 1000}
		}
		c.want("6: "+script, c.eval(script, key, append(lim, 1, 0)...), "WRONGTYPE")
		c.want("6: "+script+" on a string", c.eval(script, skey, append(lim, 1, 0)...), "BADSTATE")
	}
	c.want("6: the hash", c.run("HGETALL", key), "name alice")
	c.want("6: its TTL", c.run("PTTL", key), "-1")
	c.want("6: the string", c.run("GET", skey), "alice")
	c.want("6: its TTL", c.run("PTTL", skey), "-1")
	key = k("6z")
	c.run("ZADD", key, "1", "alice", "2", "bob")
	c.want("6: sliding_window_log", c.eval("sliding_window_log", key, 10, 1000, 1, 0), "BADSTATE")
	c.want("6: the sorted set", c.run("ZRANGE", key, "0", "-1", "WITHSCORES"), "alice 1 bob 2")
	c.want("6: its TTL", c.run("PTTL", key), "-1")
	key = k("6s")
	c.run("SET", key, "alice")
	c.want("6: gcra", c.eval("gcra", key, 10, 5, 1000, 1, 0), "BADSTATE")
	c.want("6: the string", c.run("GET", key), "alice")

	// 7. Corrupt state: the audit's hash, and the same count of nan in the
	// state as it is now, '1<t><n>'.
	key = k("7")
	c.run("HSET", key, "n", "nan", "w", "1700000000")
	for i := 0; i < 5; i++ {
		c.want("7: fixed_window", c.eval("fixed_window", key, 3, 1000, 1, c.time()), "WRONGTYPE")
	}
	c.want("7: the hash", c.run("HGETALL", key), "n nan w 1700000000")
	key = k("7s")
	corrupt := fmt.Sprintf("1%013dnan", c.time()/1000)
	c.run("SET", key, corrupt)
	for i := 0; i < 5; i++ {
		c.want("7: fixed_window", c.eval("fixed_window", key, 3, 1000, 1, c.time()), "BADSTATE")
	}
	c.want("7: the string", c.run("GET", key), corrupt)
	c.want("7: its TTL", c.run("PTTL", key), "-1")

	// 8. Lenient parsing and extra arguments.
	key = k("8")
	for _, v := range []string{"1e3", "0x10", " 5", "5 ", "+5", "1e-400"} {
		c.want("8: cost "+v, c.eval("token_bucket", key, 10, 5, 1000, "smooth", v, 0), "BADARG cost of request 1 must be an integer")
		c.want("8: now "+v, c.eval("token_bucket", key, 10, 5, 1000, "smooth", 1, v), "BADARG now must be an integer")
	}
	c.want("8: an extra argument", c.evalRaw("token_bucket", key, 10, 5, 1000, 0, "smooth", 1, 0, "extra"),
		"BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 8")
	// The layout of the version the audit ran, refused, never misread.
	c.want("8: the earlier layout", c.evalRaw("token_bucket", key, 10, 5, 1000, "smooth", 1, 0, 0), "BADARG now must be an integer")
	if got := c.run("EXISTS", key); got != "0" {
		t.Errorf("8: refused calls created the key (EXISTS %s)", got)
	}
}

// TestTrustAuditWithRedisCLI replays issue 15's cases as they were found,
// with redis-cli --eval on a real server: each is refused now (BADSTATE),
// and the key keeps its value and its TTL.
func TestTrustAuditWithRedisCLI(t *testing.T) {
	c := newCLI(t)
	k := func(n string) string { return fmt.Sprintf("trust:%s:%d", n, time.Now().UnixNano()) }
	untouched := func(what, key, value string) {
		t.Helper()
		c.want(what+": the value", c.run("GET", key), value)
		if p, err := strconv.Atoi(c.run("PTTL", key)); err != nil || p < 86000000 {
			t.Errorf("%s: PTTL %d ms (%v), want the 86400000 it was set with", what, p, err)
		}
	}

	// 15.1: leaky_bucket's state, then gcra.lua answered 1 1999 0 30 and
	// rewrote the key.
	key := k("1")
	c.want("15.1: leaky_bucket", c.eval("leaky_bucket", key, 2000, 2000, 60000, 1500, 0), "1 500 0 45000")
	c.run("PEXPIRE", key, "86400000")
	state := c.run("GET", key)
	c.want("15.1: gcra on it", c.eval("gcra", key, 2000, 2000, 60000, 1, 0), "BADSTATE")
	untouched("15.1", key, state)

	// 15.2: SET k 45035996273704960 (2^52 µs), then token_bucket answered a
	// retry_after of 85 years and fixed_window wrote an 85-year TTL; and
	// the same date in each script's own layout.
	lims := map[string][]any{"token_bucket": {10, 5, 1000, "smooth"}, "leaky_bucket": {10, 5, 1000}, "gcra": {10, 5, 1000},
		"fixed_window": {10, 1000}, "sliding_window_counter": {10, 1000}}
	far := int64(1) << 52
	// gcra's in the long form: the short one keeps the TAT modulo 10¹⁰ µs,
	// read as the one from TIME − 61 s on, so it cannot hold 2^52 (in about
	// 1 run of 80 it read as a live key's TAT and the test failed).
	own := map[string]string{
		"token_bucket":           scenario.TokenBucketState(far, 0),
		"leaky_bucket":           scenario.LeakyBucketState(far, 200000, 200000),
		"gcra":                   scenario.GCRALongState(far+200000, 200000, 200000),
		"fixed_window":           scenario.FixedWindowState(far/1000, 10),
		"sliding_window_counter": scenario.SlidingWindowCounterState(far/1000, 0, 10, 0),
	}
	for script, lim := range lims {
		for _, v := range []string{"45035996273704960", own[script]} {
			key := k("2" + script)
			c.run("SET", key, v, "PX", "86400000")
			c.want("15.2: "+script+" on "+v, c.eval(script, key, append(lim, 1, 0)...), "BADSTATE")
			c.want("15.2: "+script+" peeks at "+v, c.eval(script, key, append(lim, 0, 0)...), "BADSTATE")
			untouched("15.2: "+script, key, v)
		}
	}
	key = k("2log")
	c.run("ZADD", key, fmt.Sprint(far), scenario.LogMember(far, 1))
	c.run("PEXPIRE", key, "86400000")
	c.want("15.2: sliding_window_log", c.eval("sliding_window_log", key, 10, 1000, 1, 0), "BADSTATE")
	c.want("15.2: the sorted set", c.run("ZRANGE", key, "0", "-1"), scenario.LogMember(far, 1))
}
