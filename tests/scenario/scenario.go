// Package scenario holds the step tables that every test tier runs: the
// gopher-lua tier (tests/lua), miniredis and real Redis (tests/servers). A table
// says what a caller sends at which instant and what must come back, so the
// tiers can be compared reply for reply.
package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// T0 is the instant every scenario starts at, in µs since the epoch
// (2026-01-01T00:00:00Z). It sits on a whole day, so day-long windows that are
// aligned to the epoch start at T0.
const T0 = 1767225600 * 1000000

// NoKey is the PTTL of a key that does not exist.
const NoKey = -2

// Grace is the ms a write with a caller clock keeps its key past the
// instant the state is spent (on the server's clock): the most a caller's
// clock may lag the server's, so a late call still finds the state.
const Grace = 60000

// Spec says where a script's cost and clock arguments are, so the tiers can
// tell peeks apart and fill in the clock.
type Spec struct {
	Script string // file name in lua/ without .lua
	// CostArg is the index of cost in a step's Args, or -1 for a script
	// without one (concurrency), which never peeks.
	CostArg int
	// NowArg, when above 0, is the index of the caller clock in ARGV
	// (multi's comes before its variadic limits, a batch script's after
	// the limit's numbers); otherwise it is the last ARGV but one. The
	// deadline follows it, or with Batch ends ARGV. A step's Args leave
	// both out.
	NowArg int
	// Batch marks a script that decides a batch of requests (gcra,
	// token_bucket): ARGV ends in a cost and a deadline per request, and a
	// step's Args end in the costs, each but the last followed by its
	// deadline (the last one's is the step's).
	Batch bool
}

// batchSpecs are the scripts whose call decides a batch: ARGV is the
// limit's three numbers, the clock, a word (gcra's take, token_bucket's
// refill), then (cost, deadline) per request. Every register of them uses
// this spec.
var batchSpecs = map[string]Spec{
	"gcra":         {Script: "gcra", CostArg: 4, NowArg: 3, Batch: true},
	"token_bucket": {Script: "token_bucket", CostArg: 4, NowArg: 3, Batch: true},
}

// settleSpecs are the one-request scripts whose call may end in a settle
// after the deadline (leaky_bucket's word, the windows' word and instant):
// the clock sits at a fixed index, before a step's settle arguments. Every
// register of them uses this spec.
var settleSpecs = map[string]Spec{
	"leaky_bucket":           {Script: "leaky_bucket", CostArg: 3, NowArg: 4},
	"sliding_window_counter": {Script: "sliding_window_counter", CostArg: 2, NowArg: 3},
	"sliding_window_log":     {Script: "sliding_window_log", CostArg: 2, NowArg: 3},
}

// ClockIndex is the index of the caller clock in a step's whole ARGV.
func (sp Spec) ClockIndex(argv []string) int {
	if sp.NowArg > 0 {
		return sp.NowArg
	}
	return len(argv) - 2
}

// DeadlineIndex is the index of the deadline in a step's whole ARGV (the
// last request's, for a batch script).
func (sp Spec) DeadlineIndex(argv []string) int {
	if sp.Batch {
		return len(argv) - 1
	}
	return sp.ClockIndex(argv) + 1
}

// OneCall is the whole ARGV of one request of script: the limit (for a
// batch script its three numbers and its word, take or refill), then cost,
// now and deadline where the script takes them.
func OneCall(script string, lim []string, cost, now, deadline string) []string {
	if batchSpecs[script].Batch {
		return append(append([]string(nil), lim[:3]...), now, lim[3], cost, deadline)
	}
	return append(append([]string(nil), lim...), cost, now, deadline)
}

// CostIndex is the index of the (first request's) cost in a call's whole
// ARGV, or -1 for a script without one.
func (sp Spec) CostIndex() int {
	if sp.Batch {
		return 5
	}
	return sp.CostArg
}

// Wrote reports whether a call of the script, sent argv, may have written,
// given its reply: a request that counted something (allowed, or taken,
// above 0 for a cost above 0). An error, a denial, a peek and a request
// past its deadline write nothing.
func (sp Spec) Wrote(argv []string, reply []int64) bool {
	if sp.Batch {
		for i := 0; 4*i < len(reply) && 5+2*i < len(argv); i++ {
			if reply[4*i] > 0 && argv[5+2*i] != "0" {
				return true
			}
		}
		return false
	}
	peek := sp.CostArg >= 0 && sp.CostArg < len(argv) && argv[sp.CostArg] == "0"
	return !peek && len(reply) > 0 && reply[0] > 0
}

// Peek reports whether a step only looks: a cost of 0 (every request's,
// for a batch script).
func (sc Scenario) Peek(st Step) bool {
	sp := specs[sc.Script]
	i := sp.CostArg
	if i < 0 || i >= len(st.Args) {
		return false
	}
	if !sp.Batch {
		return st.Args[i] == "0"
	}
	for ; i < len(st.Args); i += 2 {
		if st.Args[i] != "0" {
			return false
		}
	}
	return true
}

// Scenario is one table of steps on fresh keys.
type Scenario struct {
	Name   string
	Script string
	Keys   []string
	// CallerClock sends now = T0+At with every step. Without it the steps
	// send now = 0 and the server clock is set to T0+At.
	CallerClock bool
	// Strings are keys set to plain strings before the first step, to put
	// a key of the wrong type in the script's way.
	Strings map[string]string
	// Preset, when set, lists keys to create before the first step, given
	// the instant the tier runs the scenario from (T0 on the tiers that
	// control the clock): foreign data, corrupt state, or state a script
	// could have written long before a real server's run began.
	Preset func(t0 int64) []Preset
	Steps  []Step
}

// Preset is one key created before a scenario's first step.
type Preset struct {
	Key  string
	Type string   // "string", "hash", "zset" or "list"
	Vals []string // string: the value; hash: field, value, ...; zset: score, member, ...; list: elements
	TTL  int64    // ms; 0 for none
}

// Step is one call.
type Step struct {
	At time.Duration // since T0; the server clock never goes backwards
	// Skew is how far the caller's clock (T0+At) runs ahead of the
	// server's for this step; the server's clock is T0+At-Skew (unless it
	// already passed that). Real servers keep their own clock, where a
	// step's skew is At less the time the run has taken, so a table that
	// runs there keeps its skews well inside the scripts' 60 s bound.
	Skew time.Duration
	Args []string // ARGV without the clock and the deadline
	// Raw, when set, is the whole ARGV, sent as it is instead of Args with
	// a clock and a deadline: an earlier version's layout, say.
	Raw []string
	Now string // when set, sent verbatim as the clock argument
	// Deadline, when set, is sent verbatim as the deadline argument.
	// Otherwise DeadlineIn, when not 0, sends the server's clock at the
	// step plus DeadlineIn (before it when negative); otherwise the step
	// sends 0 (none). A real server's tier reads its own clock for it.
	Deadline   string
	DeadlineIn time.Duration
	Want       []int64 // the reply, for steps that succeed
	Err        string  // the error reply's prefix, for steps that fail
	// TTL, when set, holds each key's PTTL in ms after the step (NoKey for
	// a key that must not exist). A write's TTL runs to the instant its state
	// is spent by the server's clock (reset_after with the server's clock);
	// with a caller clock it is Grace longer, so calls that reach Redis late
	// still find the key.
	TTL []int64
}

// NowArg is the clock argument a step sends.
func (sc Scenario) NowArg(st Step) string { return sc.NowArgFrom(T0, st) }

// NowArgFrom is NowArg for a run that starts at base instead of T0: a
// caller clock is base+At (an explicit Now is still sent verbatim).
func (sc Scenario) NowArgFrom(base int64, st Step) string {
	switch {
	case st.Now != "":
		return st.Now
	case sc.CallerClock:
		return fmt.Sprintf("%d", base+st.At.Microseconds())
	}
	return "0"
}

// ServerAt is the server's clock a step asks for, in µs since the epoch.
func (st Step) ServerAt() int64 { return st.ServerAtFrom(T0) }

// ServerAtFrom is ServerAt for a run that starts at base instead of T0.
func (st Step) ServerAtFrom(base int64) int64 { return base + (st.At - st.Skew).Microseconds() }

// Argv is the whole ARGV of a step: its Args with the clock where the
// script takes it.
func (sc Scenario) Argv(st Step) []string { return sc.ArgvFrom(T0, st) }

// ArgvFrom is Argv for a run that starts at base instead of T0.
func (sc Scenario) ArgvFrom(base int64, st Step) []string {
	if st.Raw != nil {
		return At(base, st.Raw)
	}
	deadline := st.Deadline
	switch {
	case deadline != "":
	case st.DeadlineIn != 0:
		deadline = fmt.Sprintf("%d", st.ServerAtFrom(base)+st.DeadlineIn.Microseconds())
	default:
		deadline = "0"
	}
	sp := specs[sc.Script]
	i := sp.NowArg
	args := At(base, st.Args)
	if i <= 0 || i > len(args) {
		return append(args, sc.NowArgFrom(base, st), deadline)
	}
	out := append([]string(nil), args[:i]...)
	out = append(out, sc.NowArgFrom(base, st))
	if sp.Batch {
		return append(append(out, args[i:]...), deadline)
	}
	out = append(out, deadline)
	return append(out, args[i:]...)
}

// Instants in a step's Args that a run places from its first instant: Ms
// and Us write them, At reads them. The calendar form of fixed_window
// takes its periods' boundaries as instants; a table names them from T0,
// and a real server's run, which starts from its own clock, moves them
// with its clocks.
const (
	msMark = "T0ms+"
	usMark = "T0us+"
)

// Ms is the instant T0+d in unix ms, as an argument (d in whole ms).
func Ms(d time.Duration) string { return msMark + fmt.Sprint(d.Milliseconds()) }

// Us is the instant T0+d in unix µs, as an argument.
func Us(d time.Duration) string { return usMark + fmt.Sprint(d.Microseconds()) }

// At is args with the instants Ms and Us wrote placed from base (µs)
// instead of T0.
func At(base int64, args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if rest, ok := strings.CutPrefix(a, msMark); ok {
			if d, err := strconv.ParseInt(rest, 10, 64); err == nil {
				out[i] = fmt.Sprint(base/1000 + d)
			}
		} else if rest, ok := strings.CutPrefix(a, usMark); ok {
			if d, err := strconv.ParseInt(rest, 10, 64); err == nil {
				out[i] = fmt.Sprint(base + d)
			}
		}
	}
	return out
}

// Held is the instant a settle's reservation was counted at, d after the
// run's start, in µs: Us(d).
func Held(d time.Duration) string { return Us(d) }

// Args formats values as ARGV strings: durations in whole ms.
func Args(vals ...any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if d, ok := v.(time.Duration); ok {
			v = d.Milliseconds()
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}

// R builds a reply: allowed (1/0), remaining, retry after and reset after in ms.
func R(allowed bool, remaining, retryMs, resetMs int64) []int64 {
	a := int64(0)
	if allowed {
		a = 1
	}
	return []int64{a, remaining, retryMs, resetMs}
}

// X is a batch script's answer to a request run at or after its deadline:
// expired (-1), and zeros.
func X() []int64 { return []int64{-1, 0, 0, 0} }

// Batch joins the replies of a batch script's requests, in order.
func Batch(replies ...[]int64) []int64 {
	var out []int64
	for _, r := range replies {
		out = append(out, r...)
	}
	return out
}

// M builds a reply of multi: allowed, the limit that binds a denial (0
// when allowed), then remaining, retry after and reset after in ms for
// each limit in turn.
func M(allowed bool, denied int64, perLimit ...int64) []int64 {
	a := int64(0)
	if allowed {
		a = 1
	}
	return append([]int64{a, denied}, perLimit...)
}

var (
	specs     = map[string]Spec{}
	scenarios []Scenario
)

func register(sp Spec, scs ...Scenario) {
	if b, ok := batchSpecs[sp.Script]; ok {
		sp = b
	}
	if b, ok := settleSpecs[sp.Script]; ok {
		sp = b
	}
	if sp.Script == fixedWindowSpec.Script {
		sp = fixedWindowSpec
	}
	specs[sp.Script] = sp
	for _, sc := range scs {
		sc.Script = sp.Script
		scenarios = append(scenarios, sc)
	}
}

// All returns every scenario, grouped by script.
func All() []Scenario {
	out := append([]Scenario(nil), scenarios...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Script < out[j].Script })
	return out
}

// SpecOf returns the spec of a script.
func SpecOf(script string) Spec { return specs[script] }

// Scripts lists the scripts that have scenarios.
func Scripts() []string {
	var out []string
	for s := range specs {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Span is how far ahead of its first instant a scenario's steps reach: on a
// real server, where the clock keeps its own pace, about how far its
// caller clocks run ahead of TIME.
func (sc Scenario) Span() time.Duration {
	var span time.Duration
	for _, st := range sc.Steps {
		span = max(span, st.At)
	}
	return span
}

// Align is the span a scenario's first instant must be a multiple of: the
// windows its steps count in are aligned to the epoch, and its replies were
// worked out from T0, which sits on a whole day.
func (sc Scenario) Align() time.Duration {
	lcm := int64(1)
	if sc.Script == "fixed_window" || sc.Script == "sliding_window_counter" {
		for _, st := range sc.Steps {
			var ms int64
			if len(st.Args) < 2 || st.Err != "" {
				continue
			}
			if _, err := fmt.Sscanf(st.Args[1], "%d", &ms); err != nil || ms < 0 || fmt.Sprint(ms) != st.Args[1] {
				continue
			}
			if ms == 0 {
				// The calendar form (window 0): its periods' boundaries
				// are whole ms from the run's first instant.
				ms = 1
			}
			us := ms * 1000
			a, b := lcm, us
			for b != 0 {
				a, b = b, a%b
			}
			lcm = lcm / a * us
		}
	}
	return time.Duration(lcm) * time.Microsecond
}
