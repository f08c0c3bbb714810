package luatest

import (
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// The fuzz targets, one per script: any stored state and any ARGV either
// get an error reply that changes nothing, or a reply that keeps the
// algorithm's promises. Each call is checked against the script's
// big-integer model (same reply, same state, same TTL), and a run of calls
// is checked against the promises themselves, which the model could share
// a mistake with:
//   - an error reply, a denial and a peek send no write and change nothing;
//   - remaining >= 0, retry_after 0 when allowed, >= 1 ms or -1 when denied;
//   - retry_after is exact: at the caller's clock plus retry_after the same
//     call passes, 1 ms earlier it is denied (while the key lives);
//   - no wait and no TTL runs past the limit's horizon plus the 60 s bound
//     (plus, for a wait, what the caller's own clock lags), whatever state
//     the key held;
//   - with one limit throughout, nothing is ever admitted over the
//     algorithm's bound, with the server's clock and callers' clocks, late
//     and early.
//
// The batch scripts (gcra, token_bucket) are fuzzed in their batch form:
// every promise holds for every request of a call, and the model decides
// the requests one call each, so a batch that answers other than its
// calls in a row is a diff.
//
// An input is three values. state is the key before the first call, in
// words split by tabs: "hash f v f v ...", "zset score member ...",
// "string value", "list", or "" for none. calls is one call a line: the µs
// the server's clock moves first (a trailing '*' sends no key, '**' two),
// then ARGV split by tabs; an argument written "~n" means the server's
// clock plus n (for clocks and deadlines). seed draws more calls after
// those, at the last limit accepted.
//
// CI runs each target for a few seconds (make fuzz-ci); make fuzz runs
// them longer. Plain go test runs the seeds below, the audit's cases
// among them.

func FuzzTokenBucket(f *testing.F)          { fuzzScript(f, "token_bucket") }
func FuzzLeakyBucket(f *testing.F)          { fuzzScript(f, "leaky_bucket") }
func FuzzGCRA(f *testing.F)                 { fuzzScript(f, "gcra") }
func FuzzFixedWindow(f *testing.F)          { fuzzScript(f, "fixed_window") }
func FuzzSlidingWindowCounter(f *testing.F) { fuzzScript(f, "sliding_window_counter") }
func FuzzSlidingWindowLog(f *testing.F)     { fuzzScript(f, "sliding_window_log") }

// fuzzLimit knows, per script, what a limit means for the checks.
type fuzzLimit struct {
	// base is a valid limit (ARGV before cost, now and deadline; for a
	// batch script its three numbers and its word) to start from.
	base []string
	// horizon is the µs a limit's state stays meaningful: the time to fill,
	// drain or pass a full burst, or the window (two for the counter).
	horizon func(a []int64) int64
	// bound is the most cost admitted within a closed span of d µs.
	bound func(a []int64, d int64) *big.Int
	// most is the largest cost that can pass.
	most func(a []int64) int64
}

var fuzzLimits = map[string]fuzzLimit{
	"token_bucket": {
		base:    []string{"10", "5", "1000", "smooth"},
		horizon: func(a []int64) int64 { return mulDivCeil(a[0], a[2]*1000, a[1]) + a[2]*1000 },
		bound: func(a []int64, d int64) *big.Int {
			// capacity + every token credited in d: rate per period,
			// smooth or in steps (one step more than whole periods).
			q := new(big.Int).Mul(big.NewInt(a[1]), big.NewInt(d/(a[2]*1000)+1))
			return q.Add(q, big.NewInt(a[0]))
		},
		most: func(a []int64) int64 { return a[0] },
	},
	"leaky_bucket": {
		base:    []string{"10", "5", "1000"},
		horizon: func(a []int64) int64 { return a[0] * ceilDiv(a[2]*1000, a[1]) },
		bound: func(a []int64, d int64) *big.Int {
			return big.NewInt(a[0] + d/ceilDiv(a[2]*1000, a[1]))
		},
		most: func(a []int64) int64 { return a[0] },
	},
	"gcra": {
		base:    []string{"10", "5", "1000", "all"},
		horizon: func(a []int64) int64 { return a[0] * ceilDiv(a[2]*1000, a[1]) },
		bound: func(a []int64, d int64) *big.Int {
			return big.NewInt(a[0] + d/ceilDiv(a[2]*1000, a[1]))
		},
		most: func(a []int64) int64 { return a[0] },
	},
	"fixed_window": {
		base:    []string{"10", "1000"},
		horizon: func(a []int64) int64 { return a[1] * 1000 },
		bound: func(a []int64, d int64) *big.Int {
			w := a[1] * 1000
			return new(big.Int).Mul(big.NewInt(a[0]), big.NewInt((d+w-1)/w+1))
		},
		most: func(a []int64) int64 { return a[0] },
	},
	"sliding_window_counter": {
		base:    []string{"10", "1000"},
		horizon: func(a []int64) int64 { return 2 * a[1] * 1000 },
		bound: func(a []int64, d int64) *big.Int {
			if d == 0 {
				return big.NewInt(a[0])
			}
			q := new(big.Int).Mul(big.NewInt(a[0]), big.NewInt(d-1))
			q.Quo(q, big.NewInt(a[1]*1000))
			return q.Add(q, big.NewInt(a[0]))
		},
		most: func(a []int64) int64 { return a[0] },
	},
	"sliding_window_log": {
		base:    []string{"10", "1000"},
		horizon: func(a []int64) int64 { return a[1] * 1000 },
		bound: func(a []int64, d int64) *big.Int {
			w := a[1] * 1000
			return new(big.Int).Mul(big.NewInt(a[0]), big.NewInt((d+w)/w))
		},
		most: func(a []int64) int64 { return a[0] },
	},
}

func fuzzScript(f *testing.F, script string) {
	for _, s := range fuzzSeeds[script] {
		f.Add(s.state, s.calls, s.seed)
	}
	src, err := Source(script)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, state, calls string, seed int64) {
		fz := &fuzzRun{t: t, script: script, src: src, lim: fuzzLimits[script]}
		fz.w = newTwin(t, script, scenario.T0)
		fz.fresh = fz.preset(state)
		lines := strings.Split(calls, "\n")
		if len(lines) > 60 {
			lines = lines[:60]
		}
		for _, line := range lines {
			keys, adv, argv, ok := fuzzLine(line)
			if !ok {
				continue
			}
			fz.advance(adv)
			for i := range argv {
				argv[i] = fuzzClock(argv[i], fz.w.lua.Now())
			}
			fz.call(keys, argv)
		}
		fz.random(rand.New(rand.NewSource(seed)), 40)
		fz.checkBound()
	})
}

// fuzzLine reads one call of a fuzz input: the µs the server's clock moves
// first (a trailing '*' sends no key, '**' two), then ARGV split by tabs;
// ok is false for a line without ARGV.
func fuzzLine(line string) (keys []string, adv int64, argv []string, ok bool) {
	fields := strings.Split(line, "\t")
	if len(fields) < 2 {
		return nil, 0, nil, false
	}
	keys, first := []string{"k"}, fields[0]
	switch {
	case strings.HasSuffix(first, "**"):
		keys, first = []string{"k", "k2"}, strings.TrimSuffix(first, "**")
	case strings.HasSuffix(first, "*"):
		keys, first = nil, strings.TrimSuffix(first, "*")
	}
	adv, _ = strconv.ParseInt(first, 10, 64)
	return keys, adv, fields[1:], true
}

// fuzzClock reads a clock argument: "~n" is the server's clock plus n (n
// within ±1e13), anything else is sent as it is.
func fuzzClock(arg string, server int64) string {
	if !strings.HasPrefix(arg, "~") {
		return arg
	}
	n, _ := strconv.ParseInt(arg[1:], 10, 64)
	return strconv.FormatInt(max(0, server+max(-1e13, min(1e13, n))), 10)
}

// fuzzRun is one input's sequence of calls.
type fuzzRun struct {
	t       *testing.T
	script  string
	src     string
	lim     fuzzLimit
	w       *twin
	fresh   bool     // the key started empty
	limit   []string // the last limit accepted, when there was one
	changed bool     // the limit changed between accepted calls
	admits  []fuzzAdmit
	latest  int64 // the latest clock seen: callers' and the server's
	// settledBlind is set once a one-request script settled (its reply
	// does not say how many units moved): checkBound then checks nothing.
	settledBlind bool
	// debt is set once the key may hold a debt (gcra's take charge, or a
	// preset state of the form that holds one): waits and TTLs may then
	// pass the horizon by the most debt a charge keeps, 1e15 µs.
	debt bool
}

// fuzzAdmit is a request that counted: a take admitted (take set) or a
// charge (cost above 0), or a refund (cost below 0, what came back).
type fuzzAdmit struct {
	sent, latest, cost int64
	take               bool
}

// settling reports whether a batch script's word settles a reservation
// (gcra's take refund or charge, token_bucket's refill *_refund or
// *_charge), whether it charges, and the word of a take under the same
// limit.
func settling(script, word string) (settle, charge bool, take string) {
	switch {
	case script == "gcra" && (word == "refund" || word == "charge"):
		return true, word == "charge", "all"
	case script == "token_bucket" && (strings.HasSuffix(word, "_refund") || strings.HasSuffix(word, "_charge")):
		return true, strings.HasSuffix(word, "_charge"), strings.Split(word, "_")[0]
	}
	return false, false, word
}

// maxDebt is the most debt gcra.lua keeps past a full burst: a charge's
// 1e15 µs, measured from a refund's clock that lags the charge's.
const maxDebt = 1e15 + 2*maxSkew

// preset puts the state in the key; it reports whether the key is empty.
func (fz *fuzzRun) preset(state string) bool {
	f := strings.Split(state, "\t")
	v := &value{kind: f[0], hash: map[string]string{}, zset: map[string]float64{}}
	switch f[0] {
	case "hash":
		for i := 1; i+1 < len(f); i += 2 {
			v.hash[f[i]] = f[i+1]
		}
		if len(v.hash) == 0 {
			return true
		}
	case "zset":
		for i := 1; i+1 < len(f); i += 2 {
			if s, err := strconv.ParseFloat(f[i], 64); err == nil && s == s {
				v.zset[f[i+1]] = s
			}
		}
		if len(v.zset) == 0 {
			return true
		}
	case "string":
		v.str = strings.Join(f[1:], "\t")
		// GCRA's settled form, or a token bucket in debt: either may hold a debt.
		fz.debt = strings.Contains(v.str, "=") || strings.Count(v.str, "-") >= 2
	case "list":
	default:
		return true
	}
	fz.w.lua.data["k"] = v.clone()
	fz.w.gold.data["k"] = v.clone()
	return false
}

func (fz *fuzzRun) advance(d int64) {
	now := min(maxTime-maxSkew, fz.w.lua.Now()+max(0, min(d, 1e13)))
	fz.w.setTime(now)
	fz.latest = max(fz.latest, now)
}

// ints reads ARGV's numbers by the script's own rule; ok is false when any
// is not one (the words, refill's and take's, are skipped).
func ints(argv []string) ([]int64, bool) {
	var out []int64
	for _, a := range argv {
		if a == "smooth" || a == "interval" || a == "all" || a == "at_most" || a == "refund" || a == "charge" ||
			strings.HasSuffix(a, "_refund") || strings.HasSuffix(a, "_charge") {
			continue
		}
		v, ok := decimal(a, 0, 1<<53)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// call sends one call through the twin and checks the promises, for each
// of its requests.
func (fz *fuzzRun) call(keys, argv []string) {
	t := fz.t
	t.Helper()
	before, pre := fz.w.lua.Snapshot(), fz.w.lua.Clone()
	reply, err := fz.w.call(keys, argv)
	c, shaped := splitArgv(fz.script, argv)
	atMost := shaped && isBatch(fz.script) && c.lim[3] == "at_most"
	// gcra's take refund and take charge are never denied: allowed is the
	// units moved, retry_after when a request of 1 passes.
	var settle, charge bool
	if shaped && isBatch(fz.script) {
		settle, charge, _ = settling(fz.script, c.lim[3])
	}
	if shaped && c.settle != nil {
		// The bucket's and the windows' settle: allowed says only whether
		// a unit moved, so the admission bound, which needs how many, is
		// not checked on such a run (the model checks every reply).
		settle, charge = true, c.settle[0] == "charge"
		fz.settledBlind = true
	}
	if charge {
		fz.debt = true
	}
	// A request writes when it counts something: allowed 1 for a cost
	// above 0, or (take at_most) what it took.
	wrote := false
	for i := 0; err == nil && shaped && i+3 < len(reply) && i/4 < len(c.reqs); i += 4 {
		wrote = wrote || reply[i].(int64) > 0 && c.reqs[i/4].cost != "0"
	}
	if !wrote {
		if after := fz.w.lua.Snapshot(); !before.Equal(after) {
			t.Fatalf("%v: an error, a denial, a peek or an expired request changed the state:\n%s->\n%s", argv, before, after)
		}
		for _, c := range fz.w.lua.Commands() {
			if writes[strings.ToUpper(strings.Fields(c)[0])] {
				t.Fatalf("%v: an error, a denial, a peek or an expired request sent %q", argv, c)
			}
		}
	}
	if err != nil {
		return
	}
	if !shaped || len(reply) != 4*len(c.reqs) {
		t.Fatalf("%v: reply %v, want 4 elements per request", argv, reply)
	}
	lim, _ := ints(c.lim)
	now, _ := strconv.ParseInt(c.now, 10, 64)
	server := fz.w.lua.Now()
	own := now
	if own == 0 {
		own = server
	}
	horizon := fz.lim.horizon(lim)
	probed := false
	for i, q := range c.reqs {
		cost, _ := strconv.ParseInt(q.cost, 10, 64)
		deadline, _ := strconv.ParseInt(q.deadline, 10, 64)
		allowed, remaining, retry, reset := reply[4*i].(int64), reply[4*i+1].(int64), reply[4*i+2].(int64), reply[4*i+3].(int64)
		if deadline > 0 && server >= deadline {
			if allowed != -1 || remaining != 0 || retry != 0 || reset != 0 {
				t.Fatalf("%v: request %d past its deadline answered %v", argv, i+1, reply[4*i:4*i+4])
			}
			continue
		}
		bad := remaining < 0 || reset < 0
		if settle {
			bad = bad || allowed < 0 || allowed > cost || retry < 0
		} else if atMost {
			// Taken, up to the cost; 0 waits for one request (a peek: 0
			// when one would pass), never forever.
			bad = bad || allowed < 0 || allowed > cost || allowed > 0 && retry != 0 ||
				allowed == 0 && cost > 0 && retry < 1 || retry < 0
		} else {
			bad = bad || allowed != 0 && allowed != 1 || allowed == 1 && retry != 0 || allowed == 0 && retry != -1 && retry < 1
		}
		if bad {
			t.Fatalf("%v: request %d answered %v", argv, i+1, reply[4*i:4*i+4])
		}
		if retry == -1 && max(cost, 1) <= fz.lim.most(lim) {
			t.Fatalf("%v: request %d: retry_after -1 for a cost that can pass", argv, i+1)
		}
		// Waits stay within the limit's horizon plus the bound, whatever
		// wrote the state (issue 15.2: a state dated further than any write
		// dates one is refused).
		wait := horizon + maxSkew + max(0, server-own)
		if fz.debt {
			wait += maxDebt
		}
		if retry*1000 > wait+1000 || reset*1000 > wait+1000 {
			t.Fatalf("%v at server %d: request %d waits %v, past the horizon %d µs plus the bound", argv, server, i+1, reply[4*i:4*i+4], horizon)
		}
		// Each call's first wait is probed (one per call keeps a target's
		// inputs cheap; over the inputs every position of a batch is one).
		if retry > 0 && !probed && c.settle == nil {
			fz.probeRetry(pre, keys, c, i, retry)
			probed = true
		}
		taken := cost
		if atMost || settle {
			taken = allowed
		}
		if settle && !charge {
			taken = -allowed
		}
		fz.latest = max(fz.latest, own)
		if allowed > 0 && taken != 0 {
			fz.admits = append(fz.admits, fuzzAdmit{sent: own, latest: fz.latest, cost: taken, take: !settle})
		}
	}
	most := horizon + 2*maxSkew
	if fz.debt {
		most += maxDebt
	}
	if p := fz.w.lua.PTTL("k"); wrote && p > most/1000+1 {
		t.Fatalf("%v: PTTL %d ms, past the horizon %d µs plus twice the bound", argv, p, horizon)
	}
	if fz.limit != nil && strings.Join(fz.limit, " ") != strings.Join(c.lim, " ") {
		fz.changed = true
	}
	fz.limit = append([]string(nil), c.lim...)
	fz.latest = max(fz.latest, own)
}

// probeRetry checks that request i's retry_after is exact, on copies of the
// key as the requests before it left it (pre is the key before the call):
// the same request alone at the caller's clock plus retry_after passes,
// and 1 ms earlier it is denied while the key still lives (a key the
// server's clock expired may let it through sooner, never later).
func (fz *fuzzRun) probeRetry(pre *Redis, keys []string, c callArgs, i int, retry int64) {
	t := fz.t
	t.Helper()
	// A refund or a charge is judged on the state it left, itself included.
	var settle bool
	var take string
	if isBatch(fz.script) {
		settle, _, take = settling(fz.script, c.lim[3])
	}
	upto := i
	if settle {
		upto = i + 1
	}
	for _, after := range []int64{retry - 1, retry} {
		r := pre.Clone()
		if upto > 0 {
			prefix := c
			prefix.reqs = c.reqs[:upto]
			if _, err := r.Eval(fz.src, keys, prefix.argv(fz.script)); err != nil {
				t.Fatalf("%v: the requests before %d alone: %v", c.argv(fz.script), i+1, err)
			}
		}
		r.SetTime(min(maxTime, r.Now()+after*1000))
		now := c.now
		if n, _ := strconv.ParseInt(now, 10, 64); n != 0 {
			if n+after*1000 > maxTime {
				return
			}
			now = strconv.FormatInt(n+after*1000, 10)
		}
		// The retry has a deadline of its own. A refund's or a charge's
		// retry_after is a take of 1's.
		a := oneCall(fz.script, c.lim, c.reqs[i].cost, now, "0")
		if settle {
			lim := append([]string(nil), c.lim...)
			lim[3] = take
			a = oneCall(fz.script, lim, "1", now, "0")
		}
		lives := r.get("k") != nil
		got, err := r.Eval(fz.src, keys, a)
		if err != nil && !fz.fresh && strings.HasPrefix(err.Error(), "BADSTATE") {
			// A preset log with a foreign member among those that left:
			// the denial read only the newest members, the admit checks
			// every member it removes (the header says so).
			return
		}
		if err != nil {
			t.Fatalf("%v: request %d: retry_after %d ms, then %v", c.argv(fz.script), i+1, retry, err)
		}
		ok := got.([]any)[2] == int64(0)
		switch {
		case after == retry && !ok:
			t.Fatalf("%v: request %d: retry_after %d ms, then still denied: %v", c.argv(fz.script), i+1, retry, got)
		case after < retry && ok && lives:
			t.Fatalf("%v: request %d: retry_after %d ms, but allowed 1 ms sooner: %v", c.argv(fz.script), i+1, retry, got)
		}
	}
}

// random sends n more calls at the last limit accepted (now and then a
// changed one), with costs around it, the server's clock and callers'
// clocks, late and early, and now and then out of the bound.
func (fz *fuzzRun) random(rng *rand.Rand, n int) {
	base := fz.limit
	if base == nil {
		base = fz.lim.base
	}
	lim, ok := ints(base)
	if !ok || len(lim) == 0 {
		return
	}
	most := fz.lim.most(lim)
	horizon := fz.lim.horizon(lim)
	for i := 0; i < n; i++ {
		switch rng.Intn(3) {
		case 0:
			fz.advance(rng.Int63n(horizon/max(most, 1) + 2))
		case 1:
			fz.advance(rng.Int63n(horizon/4 + 2))
		}
		now := "0"
		switch rng.Intn(4) {
		case 0:
			now = strconv.FormatInt(fz.w.lua.Now()+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
		case 1:
			now = strconv.FormatInt(fz.w.lua.Now()-rng.Int63n(horizon+1), 10)
		}
		var cost int64
		switch rng.Intn(4) {
		case 1:
			cost = rng.Int63n(most + 2)
		case 2, 3:
			cost = 1 + rng.Int63n(max(1, most/4))
		}
		// Now and then a deadline just before, at or after the server's TIME.
		deadline := func() string {
			if rng.Intn(10) == 0 {
				return strconv.FormatInt(fz.w.lua.Now()+rng.Int63n(3)-1, 10)
			}
			return "0"
		}
		c := callArgs{lim: append([]string(nil), base...), now: now, reqs: []request{{strconv.FormatInt(cost, 10), deadline()}}}
		if settlesAfter(fz.script) && rng.Intn(5) == 0 {
			// A settle: the windows' at is the server's clock now, or up to
			// a horizon back, or up to 60 s ahead.
			c.settle = []string{[...]string{"refund", "charge"}[rng.Intn(2)]}
			if fz.script != "leaky_bucket" {
				at := fz.w.lua.Now() - rng.Int63n(horizon+1)*int64(rng.Intn(2))
				if rng.Intn(4) == 0 {
					at = fz.w.lua.Now() + rng.Int63n(maxSkew+1)
				}
				c.settle = append(c.settle, strconv.FormatInt(max(1, at), 10))
			}
		}
		if isBatch(fz.script) {
			// Half the calls are batches of 2 to 6 requests, of costs
			// drawn alike; gcra's take is at_most, refund or charge now and
			// then, and a charge now and then far past any burst.
			for n := rng.Intn(2) * (1 + rng.Intn(5)); n > 0; n-- {
				c.reqs = append(c.reqs, request{strconv.FormatInt(rng.Int63n(most+2), 10), deadline()})
			}
			if fz.script == "gcra" {
				c.lim[3] = [...]string{"all", "all", "all", "at_most", "refund", "charge"}[rng.Intn(6)]
			}
			if fz.script == "token_bucket" {
				if refill := strings.Split(c.lim[3], "_")[0]; rng.Intn(3) == 0 {
					c.lim[3] = refill + [...]string{"_refund", "_charge"}[rng.Intn(2)]
				} else {
					c.lim[3] = refill
				}
			}
			if _, charge, _ := settling(fz.script, c.lim[3]); charge && rng.Intn(20) == 0 {
				c.reqs[0].cost = "1000000000"
			}
		}
		if rng.Intn(25) == 0 {
			// A changed limit: each number halved or doubled.
			for j, a := range c.lim {
				if v, err := strconv.ParseInt(a, 10, 64); err == nil {
					if rng.Intn(2) == 0 {
						v = max(1, v/2)
					} else {
						v *= 2
					}
					c.lim[j] = strconv.FormatInt(v, 10)
				}
			}
		}
		fz.call([]string{"k"}, c.argv(fz.script))
	}
}

// checkBound: with one limit throughout and a key that started empty, the
// cost admitted by any run of calls that ends in an admitted take stays
// within the algorithm's bound over the span from the first call's clock
// to the latest clock seen (callers' or the server's) by the last. gcra's
// charges count in the run and its refunds count against it (a refund
// gives back no more than it says, so the bound holds for the net cost).
func (fz *fuzzRun) checkBound() {
	if !fz.fresh || fz.changed || fz.limit == nil || fz.settledBlind {
		return
	}
	lim, _ := ints(fz.limit)
	for i := range fz.admits {
		var sum int64
		for _, a := range fz.admits[i:] {
			sum += a.cost
			if !a.take {
				continue
			}
			span := max(0, a.latest-fz.admits[i].sent)
			if b := fz.lim.bound(lim, span); big.NewInt(sum).Cmp(b) > 0 {
				fz.t.Fatalf("admitted %d within %d µs, bound %v (limit %v)", sum, span, b, fz.limit)
			}
		}
	}
}
