package scenario

import (
	"fmt"
	"time"
)

// The cases of issue 15 ("trust, round 3") that one script shows alone, on
// every tier: a call its caller gave up on changes nothing (the deadline),
// and stored state dated further ahead than any write could date it is
// refused. (That no script accepts another's state is tested across every
// pair of scripts in tests/lua and tests/servers: crossing_test.go.)

// farAhead is, per script, its state dated µs past the server's clock at
// t0 (a write's clock, or its newest instant, at t0 + ahead): the most a
// write with a caller clock 60 s ahead can date one is 60 s.
var farAhead = map[string]func(t0, ahead int64) Preset{
	"token_bucket": func(t0, ahead int64) Preset {
		return Preset{Key: "tb:{far}", Type: "string", Vals: []string{TokenBucketState(t0+ahead, 3)}, TTL: 86400000}
	},
	"leaky_bucket": func(t0, ahead int64) Preset {
		return Preset{Key: "lb:{far}", Type: "string", Vals: []string{LeakyBucketState(t0+ahead, 200000, 200000)}, TTL: 86400000}
	},
	"gcra": func(t0, ahead int64) Preset {
		return Preset{Key: "gcra:{far}", Type: "string", Vals: []string{GCRAState(t0+ahead+200000, 200000, 200000)}, TTL: 86400000}
	},
	"fixed_window": func(t0, ahead int64) Preset {
		return Preset{Key: "fw:{far}", Type: "string", Vals: []string{FixedWindowState((t0+ahead)/1000, 1)}, TTL: 86400000}
	},
	"sliding_window_counter": func(t0, ahead int64) Preset {
		t := (t0 + ahead) / 1000
		return Preset{Key: "swc:{far}", Type: "string", Vals: []string{SlidingWindowCounterState(t-t%1000, t%1000, 1, 0)}, TTL: 86400000}
	},
	"sliding_window_log": func(t0, ahead int64) Preset {
		return Preset{Key: "swl:{far}", Type: "zset", Vals: []string{fmt.Sprint(t0 + ahead), LogMember(t0+ahead, 1)}, TTL: 86400000}
	},
}

func init() {
	sec := time.Second
	for script, s := range smalls {
		spec := Spec{Script: script, CostArg: len(s.args(0)) - 1}
		key := func(n string) []string { return []string{s.key[:len(s.key)-1] + n + "}"} }
		far := farAhead[script]
		// A batch script answers a request past its deadline on its own
		// (expired, X), where the others answer the call EXPIRED.
		deadline := "deadline"
		if batchSpecs[script].Batch {
			deadline = "deadline of request 1"
		}
		expired := func(st Step) Step {
			if batchSpecs[script].Batch {
				st.Err, st.Want = "", X()
			}
			return st
		}
		register(spec,
			Scenario{
				// With WithTimeout(50ms) and a 3 s SIGSTOP, Redis counted
				// admissions that no caller received: the calls queued
				// behind the stall ran on resume.
				Name: "issue 15.4: a call run at or after its deadline changes nothing",
				Keys: key("deadline"),
				Steps: []Step{
					expired(Step{Args: s.args(1), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{NoKey}}),
					expired(Step{Args: s.args(0), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{NoKey}}),
					// The server's TIME equal to the deadline: the caller has
					// stopped waiting (a context is done at its deadline).
					expired(Step{Args: s.args(1), Deadline: fmt.Sprint(T0), Err: "EXPIRED", TTL: []int64{NoKey}}),
					{Args: s.args(1), DeadlineIn: 10 * sec, Want: s.first, TTL: []int64{s.ttl}},
					expired(Step{Args: s.args(1), DeadlineIn: -time.Microsecond, Err: "EXPIRED", TTL: []int64{s.ttl}}),
					expired(Step{Args: s.args(10), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{s.ttl}}),
					{Args: s.args(1), Deadline: "4503599627370497", Err: "BADARG " + deadline + " must be an integer from 0 to 4503599627370496, got '4503599627370497'"},
					{Args: s.args(1), Deadline: "-1", Err: "BADARG deadline"},
					{Args: s.args(1), Deadline: "1e15", Err: "BADARG deadline"},
					// A bad clock is named before a passed deadline.
					{Args: s.args(1), Now: "1", DeadlineIn: -sec, Err: "BADARG now must be 0"},
				},
			},
			Scenario{
				// SET k 45035996273704960 (2^52 µs) then token_bucket gave a
				// retry_after of 85 years; fixed_window wrote an 85-year TTL.
				Name: "issue 15.2: a state dated past TIME + 60 s is refused and left as it is",
				Keys: []string{far(T0, 0).Key},
				Preset: func(t0 int64) []Preset {
					return []Preset{far(t0, 60*sec.Microseconds()+1000)}
				},
				Steps: []Step{
					{Args: s.args(1), Err: "BADSTATE", TTL: []int64{86400000}},
					{Args: s.args(0), Err: "BADSTATE", TTL: []int64{86400000}},
					{Args: s.args(10), Err: "BADSTATE", TTL: []int64{86400000}},
				},
			},
			Scenario{
				Name: "issue 15.2: a state dated 2^52 µs is refused and left as it is",
				Keys: []string{far(T0, 0).Key},
				Preset: func(t0 int64) []Preset {
					return []Preset{far(0, 1<<52)}
				},
				Steps: []Step{
					{Args: s.args(1), Err: "BADSTATE", TTL: []int64{86400000}},
				},
			},
		)
	}
	// A write with a caller clock 60 s ahead dates state 60 s past TIME:
	// that much is still this script's state (the exact tiers only: a real
	// server's run starts ahead of its clock).
	register(Spec{Script: "token_bucket"}, Scenario{
		Name: "issue 15.2: a state dated exactly TIME + 60 s is still the script's",
		Keys: []string{"tb:{far}"},
		Preset: func(t0 int64) []Preset {
			return []Preset{farAhead["token_bucket"](t0, 60*sec.Microseconds())}
		},
		Steps: []Step{
			// 3 tokens, credited up to 60 s from now: judged at that time.
			{Args: Args(10, 5, 1000, "smooth", 3), Want: R(true, 0, 0, 62000), TTL: []int64{62000}},
		},
	})
	register(Spec{Script: "gcra"}, Scenario{
		Name: "issue 15.2: a state dated exactly TIME + 60 s is still the script's",
		Keys: []string{"gcra:{far}"},
		Preset: func(t0 int64) []Preset {
			return []Preset{farAhead["gcra"](t0, 60*sec.Microseconds())}
		},
		Steps: []Step{
			// The TAT is 60.2 s ahead and a burst is 2 s: a server-clock call
			// waits 58.4 s, for one interval of room.
			{Args: Args(10, 5, 1000, "all", 1), Want: R(false, 0, 58400, 60200), TTL: []int64{86400000}},
		},
	})
}

func init() {
	sec, ms := time.Second, time.Millisecond
	type lim struct {
		burst, rate int
		period      time.Duration
	}
	perSec := lim{2, 1, sec}
	m := func(cost int, ls ...lim) []string {
		args := Args(cost)
		for _, l := range ls {
			args = append(args, Args(l.burst, l.rate, l.period)...)
		}
		return args
	}
	register(Spec{Script: "multi", CostArg: 0, NowArg: 1},
		Scenario{
			Name: "issue 15.4: a call run at or after its deadline writes no key",
			Keys: []string{"md:{a}", "md2:{a}"},
			Steps: []Step{
				{Args: m(1, perSec, perSec), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{NoKey, NoKey}},
				{Args: m(1, perSec, perSec), DeadlineIn: 10 * sec, Want: M(true, 0, 1, 0, 1000, 1, 0, 1000), TTL: []int64{1000, 1000}},
				{Args: m(1, perSec, perSec), DeadlineIn: -time.Microsecond, Err: "EXPIRED", TTL: []int64{1000, 1000}},
				{Args: m(1, perSec, perSec), Deadline: "x", Err: "BADARG deadline must be an integer from 0 to 4503599627370496, got 'x'"},
			},
		},
		Scenario{
			Name: "issue 15.2: a state dated past TIME + 60 s at any key is refused, and no key is written",
			Keys: []string{"mfar:{b}", "mfar2:{b}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "mfar2:{b}", Type: "string", Vals: []string{GCRAState(t0+60000001+1000000, 1000000, 1000000)}, TTL: 86400000}}
			},
			Steps: []Step{
				{Args: m(1, perSec, perSec), Err: "BADSTATE key 2", TTL: []int64{NoKey, 86400000}},
			},
		},
	)
	c := func(op, lease string, limit int, ttl time.Duration) []string {
		return Args(op, lease, limit, ttl)
	}
	register(Spec{Script: "concurrency", CostArg: -1},
		Scenario{
			// An acquire whose reply was lost kept its slot for the lease's
			// whole TTL: 1.5 s after a 3 s stall, 4-8 of 8 slots were held
			// by leases nobody owned.
			Name: "issue 15.4: an acquire run at or after its deadline holds no slot",
			Keys: []string{"ccd:{a}"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 1, 10*sec), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{NoKey}},
				{At: 0, Args: c("acquire", "a", 1, 10*sec), DeadlineIn: sec, Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				// A renew its caller gave up on does not extend the lease.
				{At: sec, Args: c("renew", "a", 1, 10*sec), DeadlineIn: -ms, Err: "EXPIRED", TTL: []int64{9000}},
				{At: sec, Args: c("acquire", "b", 1, 10*sec), DeadlineIn: -ms, Err: "EXPIRED", TTL: []int64{9000}},
				// A release goes without a deadline: freeing a slot late is
				// never wrong. With one that passed, it too changes nothing.
				{At: sec, Args: c("release", "a", 1, 10*sec), DeadlineIn: -ms, Err: "EXPIRED", TTL: []int64{9000}},
				{At: sec, Args: c("release", "a", 1, 10*sec), Want: R(true, 1, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			// concurrency.lua reaped every member of a sliding window log:
			// they looked like lease ids with past scores. A member that is
			// not a lease is never removed, wherever it sits.
			Name: "issue 15.1: an expired member that is not a lease is never reaped",
			Keys: []string{"ccr:{a}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "ccr:{a}", Type: "zset", TTL: 60000, Vals: []string{
					Args(t0 - 2e6)[0], "old", Args(t0 - 1e6)[0], LogMember(t0-1e6, 1), Args(t0 + 5e6)[0], "live"}}}
			},
			Steps: []Step{
				{At: 0, Args: c("acquire", "new", 5, sec), Err: "BADSTATE", TTL: []int64{60000}},
				{At: 0, Args: c("renew", "live", 5, sec), Err: "BADSTATE", TTL: []int64{60000}},
				// Calls that write nothing answer as before.
				{At: 0, Args: c("acquire", "new", 1, sec), Want: R(false, 0, 5000, 5000), TTL: []int64{60000}},
			},
		},
	)
	register(Spec{Script: "sliding_window_log", CostArg: 2},
		Scenario{
			Name: "issue 15.1: a member that left the window and is not the log's is never removed",
			Keys: []string{"swlr:{a}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "swlr:{a}", Type: "zset", TTL: 60000, Vals: []string{
					Args(t0 - 3e6)[0], LogMember(t0-3e6, 1), Args(t0 - 2e6)[0], "lease-id", Args(t0 - 500e3)[0], LogMember(t0-500e3, 1)}}}
			},
			Steps: []Step{
				// A peek and a denial read only the newest and oldest.
				{At: 0, Args: Args(1, sec, 0), Want: R(false, 0, 500, 500), TTL: []int64{60000}},
				{At: 0, Args: Args(10, sec, 1), Err: "BADSTATE", TTL: []int64{60000}},
			},
		},
	)
}
