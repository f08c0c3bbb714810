package scenario

import (
	"fmt"
	"time"
)

// The cases of issue 8 ("vetted means unbreakable"), one scenario each per
// script they apply to, so every tier runs them, the real servers too. An
// audit on Redis 7.0 broke each of them before the scripts were hardened.

// small is, per script, a small limit (10 at once, refilled in about 2 s)
// and the reply and TTL of its first cost-1 call at T0 with the server's
// clock, so the cases below read alike for all six.
type small struct {
	key   string
	args  func(cost int) []string
	first []int64
	ttl   int64
}

var smalls = map[string]small{
	"token_bucket": {"tb:{audit}", func(c int) []string { return Args(10, 5, 1000, "smooth", c) }, R(true, 9, 0, 200), 200},
	"leaky_bucket": {"lb:{audit}", func(c int) []string { return Args(10, 5, 1000, c) }, R(true, 9, 0, 200), 200},
	"gcra":         {"gcra:{audit}", func(c int) []string { return Args(10, 5, 1000, "all", c) }, R(true, 9, 0, 200), 200},
	"fixed_window": {"fw:{audit}", func(c int) []string { return Args(10, 1000, c) }, R(true, 9, 0, 1000), 1000},
	"sliding_window_log": {"swl:{audit}", func(c int) []string { return Args(10, 1000, c) },
		R(true, 9, 0, 1000), 1000},
	"sliding_window_counter": {"swc:{audit}", func(c int) []string { return Args(10, 1000, c) },
		R(true, 9, 0, 2000), 2000},
}

// nowErr is the error a caller clock out of the bound gets.
func nowErr(now string) string {
	return "BADARG now must be 0 (the server's clock) or within 60000000 µs of the server's TIME, got '" + now + "'"
}

func init() {
	sec := time.Second
	for script, s := range smalls {
		spec := Spec{Script: script, CostArg: len(s.args(0)) - 1}
		key := func(n string) []string { return []string{s.key[:len(s.key)-1] + n + "}"} }
		register(spec,
			Scenario{
				// token_bucket k , 10 5 1000 smooth 10 4503599627370496 used to
				// date the bucket 85 years ahead: every server-clock call after
				// it was denied, and the key's PTTL was 85 years.
				Name: "audit 1: a caller clock far from the server's is refused and locks nothing",
				Keys: key("1"),
				Steps: []Step{
					{Args: s.args(10), Now: "4503599627370496", Err: nowErr("4503599627370496"), TTL: []int64{NoKey}},
					{Args: s.args(10), Now: fmt.Sprint(T0 + 60*sec.Microseconds() + 1), Err: nowErr(fmt.Sprint(T0 + 60*sec.Microseconds() + 1))},
					{Args: s.args(1), Want: s.first, TTL: []int64{s.ttl}},
				},
			},
			Scenario{
				// fixed_window k , 10 1000 1 0 then ... 1 1 answered a reset
				// of 57 years and set that PTTL.
				Name: "audit 2: a caller clock far behind the server's is refused and stretches nothing",
				Keys: key("2"),
				Steps: []Step{
					{Args: s.args(1), Want: s.first, TTL: []int64{s.ttl}},
					{Args: s.args(1), Now: "1", Err: nowErr("1"), TTL: []int64{s.ttl}},
					{Args: s.args(1), Now: fmt.Sprint(T0 - 60*sec.Microseconds() - 1), Err: nowErr(fmt.Sprint(T0 - 60*sec.Microseconds() - 1))},
				},
			},
			Scenario{
				// Other inputs of the same kind as issue 8's case 8.
				Name: "audit 8: lenient numbers and extra arguments are refused",
				Keys: key("8"),
				Steps: append(lenient(s.args, spec.CostArg, batchSpecs[script].Batch),
					extraStep(script, s.args(1)),
					Step{Args: s.args(1), Want: s.first, TTL: []int64{s.ttl}},
				),
			},
		)
	}
}

// extraStep is a call of script with one ARGV more than args, the clock
// and the deadline: where a settle's word goes, for the scripts that take
// one there.
func extraStep(script string, args []string) Step {
	if script == fixedWindowSpec.Script {
		// Its Args past the cost follow the deadline (the form).
		return Step{Args: append(args, "extra"), Err: extraErr(script, len(args)+2)}
	}
	if _, ok := settleSpecs[script]; ok {
		return Step{Raw: append(append([]string(nil), args...), "0", "0", "extra"), Err: extraErr(script, len(args)+2)}
	}
	return Step{Args: append(args, "0"), Now: "0", Deadline: "extra", Err: extraErr(script, len(args)+2)}
}

// extraErr is what a call of script with one ARGV more than its n gets.
func extraErr(script string, n int) string {
	if batchSpecs[script].Batch {
		return fmt.Sprintf("BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and %d", n+1)
	}
	// One argument more is where a settle's word goes: a word it is not.
	switch script {
	case "leaky_bucket":
		return "BADARG settle must be 'refund' or 'charge' (or absent, for a pour)"
	case "sliding_window_counter", "sliding_window_log":
		return "BADARG settle's take must be 'refund' or 'charge' (or absent, for an admit)"
	}
	return fmt.Sprintf("BADARG takes 1 key(s) and %d arguments, got 1 and %d", n, n+1)
}

// lenient is a step for every lenient spelling of a number that tonumber
// takes, in the cost and in the clock: each is BADARG. A batch script names
// the request.
func lenient(args func(int) []string, costArg int, batch bool) []Step {
	cost := "cost"
	if batch {
		cost = "cost of request 1"
	}
	var steps []Step
	for _, v := range []string{"1e0", "0x1", " 1", "1 ", "+1", "1\x00junk", "01", "-0", "1.0", "1e-400"} {
		a := args(1)
		a[costArg] = v
		shown := v
		if v == "1\x00junk" {
			shown = "1?junk"
		}
		steps = append(steps,
			Step{Args: a, Err: fmt.Sprintf("BADARG %s must be an integer from 0 to 1000000000, got '%s'", cost, shown)},
			Step{Args: args(1), Now: v, Err: fmt.Sprintf("BADARG now must be an integer from 0 to 4503599627370496, got '%s'", shown)},
		)
	}
	return steps
}

func init() {
	sec, ms := time.Second, time.Millisecond
	tb := func(capacity, rate int, period time.Duration, cost int) []string {
		return Args(capacity, rate, period, "smooth", cost)
	}
	fw := func(limit int, window time.Duration, cost int) []string { return Args(limit, window, cost) }
	register(fixedWindowSpec,
		Scenario{
			// The state stored a window number: 5 per 60 s after 5 per 1 s
			// read window 1767225600 of 1 s as one of 60 s, 1.06e14 ms away.
			// (10 s here, so the real tiers run it too: their runs start on
			// a whole window of the server's clock, which 60 s would not
			// leave inside the bound; tests/servers runs the audit's own 60 s
			// through redis-cli.)
			Name: "audit 3: a longer window counts the calls so far and never bricks the key",
			Keys: []string{"fw:{audit3}"},
			Steps: []Step{
				{Args: fw(5, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
				{Args: fw(5, 10*sec, 1), Want: R(true, 3, 0, 10000), TTL: []int64{10000}},
				{Args: fw(5, 10*sec, 1), Want: R(true, 2, 0, 10000), TTL: []int64{10000}},
				{Args: fw(5, 10*sec, 1), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				{Args: fw(5, 10*sec, 1), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				{Args: fw(5, 10*sec, 1), Want: R(false, 0, 10000, 10000), TTL: []int64{10000}},
			},
		},
		Scenario{
			// HSET k n nan w 1700000000 made all five calls pass, with
			// remaining -9223372036854775808. The state is one string now,
			// '<t><n>': the same corruption is a count of nan.
			Name: "audit 7: corrupt state is refused and left as it is",
			Keys: []string{"fw:{audit7}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "fw:{audit7}", Type: "string", Vals: []string{fmt.Sprintf("1%013dnan", t0/1000)}}}
			},
			Steps: []Step{
				{Args: fw(3, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{Args: fw(3, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{Args: fw(3, sec, 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
	register(Spec{Script: "token_bucket"},
		Scenario{
			// A bucket drained 12890000009 µs ago at 9999999 per day has
			// credited 1491897.9999... tokens; doubles made it 1491898, the
			// call passed and left tokens = -1.
			Name: "audit 4: a credit a product's last digit decides is exact",
			Keys: []string{"tb:{audit4}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "tb:{audit4}", Type: "string", TTL: 86400000,
					Vals: []string{TokenBucketState(t0-12890000009, 0)}}}
			},
			Steps: []Step{
				{Args: tb(10000000, 9999999, 24*time.Hour, 1491898), Want: R(false, 1491897, 1, 73510009)},
				{Args: tb(10000000, 9999999, 24*time.Hour, 0), Want: R(true, 1491897, 0, 73510009)},
				{At: time.Microsecond, Args: tb(10000000, 9999999, 24*time.Hour, 1491898), Want: R(true, 0, 0, 86400009), TTL: []int64{86400009}},
			},
		},
		Scenario{
			// Drained 1000000001 µs ago at 999999999 per 1e11 ms: 9999.99...
			// tokens, which doubles made 10000.
			Name: "audit 4: the largest bucket credits exactly too",
			Keys: []string{"tb:{audit4b}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "tb:{audit4b}", Type: "string", TTL: 86400000,
					Vals: []string{TokenBucketState(t0-1000000001, 0)}}}
			},
			Steps: []Step{
				{Args: tb(1000000000, 999999999, 100000000000*ms, 10000), Want: R(false, 9999, 1, 99999000100)},
				{At: time.Microsecond, Args: tb(1000000000, 999999999, 100000000000*ms, 10000), Want: R(true, 0, 0, 100000000101), TTL: []int64{100000000101}},
			},
		},
	)
	// A late caller is judged at the stored time; it used to be told to wait
	// from there, so retrying at its own clock plus retry_after was denied.
	late := func(args func(cost int) []string, key string) Scenario {
		return Scenario{
			Name:        "audit 5: a late caller's retry_after counts from its own clock",
			Keys:        []string{key},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: args(1), Want: R(true, 0, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 9 * sec, Args: args(1), Want: R(false, 0, 2000, 2000), TTL: []int64{Grace + 1000}},
				{At: 10 * sec, Args: args(1), Want: R(false, 0, 1000, 1000), TTL: []int64{Grace + 1000}},
				{At: 10999 * ms, Args: args(1), Want: R(false, 0, 1, 1), TTL: []int64{Grace + 1}},
				{At: 11 * sec, Args: args(1), Want: R(true, 0, 0, 1000), TTL: []int64{Grace + 1000}},
			},
		}
	}
	register(Spec{Script: "token_bucket"}, late(func(c int) []string { return tb(1, 1, sec, c) }, "tb:{audit5}"))
	register(Spec{Script: "leaky_bucket", CostArg: 3}, late(func(c int) []string { return Args(1, 1, sec, c) }, "lb:{audit5}"))
	register(Spec{Script: "sliding_window_log", CostArg: 2}, late(func(c int) []string { return Args(1, sec, c) }, "swl:{audit5}"))

	// Foreign data: the audit's HSET k name alice and ZADD k 1 alice 2 bob
	// were overwritten and given a TTL. A key of the script's own type that
	// holds no state of its is BADSTATE; a key of another type, WRONGTYPE
	// (the scripts that keep a string now meet the audit's hashes so).
	foreign := func(script string, costArg int, args []string, own string, presets ...Preset) {
		for i, p := range presets {
			code := "BADSTATE"
			if p.Type != own {
				code = "WRONGTYPE"
			}
			p := p
			peek := append([]string(nil), args...)
			peek[costArg] = "0"
			register(Spec{Script: script, CostArg: costArg}, Scenario{
				Name:   fmt.Sprintf("audit 6: foreign data is refused and left as it is (%d: a %s)", i+1, p.Type),
				Keys:   []string{p.Key},
				Preset: func(int64) []Preset { return []Preset{p} },
				Steps: []Step{
					{Args: args, Err: code, TTL: []int64{-1}},
					{Args: peek, Err: code, TTL: []int64{-1}},
				},
			})
		}
	}
	list := func(key string) Preset { return Preset{Key: key, Type: "list", Vals: []string{"alice"}} }
	alice := func(key string, more ...string) Preset {
		return Preset{Key: key, Type: "hash", Vals: append([]string{"name", "alice"}, more...)}
	}
	str := func(key, v string) Preset { return Preset{Key: key, Type: "string", Vals: []string{v}} }
	foreign("token_bucket", 4, tb(5, 1, sec, 1), "string", alice("tb:{a6}"), alice("tb:{b6}", "tokens", "5", "ts", "1767225600000000"), list("tb:{c6}"),
		str("tb:{d6}", "alice"), str("tb:{e6}", "-1767225600000000alice"))
	foreign("leaky_bucket", 3, Args(5, 1, sec, 1), "string", alice("lb:{a6}"), alice("lb:{b6}", "level", "0", "ts", "1767225600000000", "unit", "200000"), list("lb:{c6}"),
		str("lb:{d6}", "alice"), str("lb:{e6}", "l1767225600000000200000/alice"))
	foreign("fixed_window", 2, fw(5, sec, 1), "string", alice("fw:{a6}"), alice("fw:{b6}", "n", "1", "t", "1767225600000000"), list("fw:{c6}"),
		str("fw:{d6}", "alice"), str("fw:{e6}", "11767225600000alice"))
	foreign("sliding_window_counter", 2, fw(5, sec, 1), "string", alice("swc:{a6}"),
		alice("swc:{b6}", "s", "1767225600000000", "t", "1767225600000000", "cur", "1", "prev", "0"), list("swc:{c6}"),
		str("swc:{d6}", "alice"), str("swc:{e6}", "c17672256000000/1/alice"))
	foreign("sliding_window_log", 2, fw(5, sec, 1), "zset",
		Preset{Key: "swl:{a6}", Type: "zset", Vals: []string{"1", "alice", "2", "bob"}},
		// Newest member ours, oldest not.
		Preset{Key: "swl:{b6}", Type: "zset", Vals: []string{"1", "alice", "1767225600000000", LogMember(1767225600000000, 1)}},
		list("swl:{c6}"))
	foreign("gcra", 4, Args(5, 1, sec, "all", 1), "string",
		Preset{Key: "gcra:{a6}", Type: "string", Vals: []string{"alice"}},
		Preset{Key: "gcra:{b6}", Type: "string", Vals: []string{"g1767225600000000200000/alice"}},
		list("gcra:{c6}"))
}
