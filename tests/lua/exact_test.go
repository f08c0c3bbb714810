package luatest

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// twin runs a script and its model side by side on two copies of one
// server and fails at the first call where their replies or their states
// differ.
type twin struct {
	t      *testing.T
	script string
	src    string
	lua    *Redis
	gold   *Redis
	model  model
	calls  int
}

func newTwin(t *testing.T, script string, now int64) *twin {
	t.Helper()
	src, err := Source(script)
	if err != nil {
		t.Fatal(err)
	}
	if models[script] == nil {
		t.Fatalf("%s has no model", script)
	}
	lua := New(now)
	return &twin{t: t, script: script, src: src, lua: lua, gold: lua.Clone(), model: models[script]}
}

func (w *twin) setTime(us int64) {
	w.lua.SetTime(us)
	w.gold.SetTime(us)
}

// call sends one call to both and returns the script's reply.
func (w *twin) call(keys, argv []string) ([]any, error) {
	w.t.Helper()
	w.calls++
	if len(keys) >= 2 && takesFormItself(w.t, w.script) {
		return nil, w.callForm(keys, argv)
	}
	got, err := w.lua.Eval(w.src, keys, argv)
	want, wantErr := w.model(w.gold, keys, argv)
	if !sameReply(err, wantErr) {
		w.t.Fatalf("%s %v at %d (call %d): script says (%v, %v), model %v", w.script, argv, w.lua.Now(), w.calls, got, err, wantErr)
	}
	if err == nil {
		g := make([]int64, len(got.([]any)))
		for i, v := range got.([]any) {
			g[i] = v.(int64)
		}
		if diff := cmp.Diff(want, g); diff != "" {
			w.t.Fatalf("%s %v at %d (call %d): reply (-model +script):\n%s", w.script, argv, w.lua.Now(), w.calls, diff)
		}
	}
	if a, b := w.lua.Snapshot(), w.gold.Snapshot(); !a.Equal(b) {
		w.t.Fatalf("%s %v at %d (call %d): state (-model +script):\n%s", w.script, argv, w.lua.Now(), w.calls, cmp.Diff(b.String(), a.String()))
	}
	if err != nil {
		return nil, err
	}
	return got.([]any), nil
}

// config is one set of arguments before cost and now (a batch script's
// limit and its word: see callArgs).
type config []string

// adversarial lists, per script, configurations chosen to break doubles:
// the largest bounds, rates that do not divide their period, products far
// beyond 2^53, and the smallest periods.
func adversarial(script string) []config {
	big := []int64{1e9, 999_999_999, 999_999_937, 10_000_000, 9_999_999, 1_491_898, 7, 3, 1}
	periods := []int64{1e11, 99_999_999_989, 86_400_000, 1e8, 60_000, 1000, 7, 1}
	var out []config
	for _, c := range big {
		for _, r := range big {
			for _, p := range periods {
				s := func(v int64) string { return strconv.FormatInt(v, 10) }
				switch script {
				case "token_bucket":
					out = append(out, config{s(c), s(r), s(p), "smooth"}, config{s(c), s(r), s(p), "interval"})
				case "gcra":
					out = append(out, config{s(c), s(r), s(p), "all"}, config{s(c), s(r), s(p), "at_most"})
				case "leaky_bucket":
					out = append(out, config{s(c), s(r), s(p)})
				case "fixed_window", "sliding_window_counter":
					out = append(out, config{s(c), s(p)})
				case "sliding_window_log":
					// No products here, only times; a log of 10000 members
					// makes each call slow, so one such config will do.
					out = append(out, config{s(min(c, 50)), s(p)})
				}
			}
		}
	}
	if script == "sliding_window_log" {
		out = append(out, config{"10000", "1000"}, config{"10000", "100000000000"})
	}
	return out
}

// TestScriptsAreExact searches for a counterexample to "exact for every
// accepted input": each script against its big-integer model, over the
// adversarial configurations, with costs up to the limit and beyond, gaps
// from 1 µs to a whole period, the server's clock and callers' clocks up to
// 60 s either side of it, clocks near 2^52, and a limit that changes
// between calls. The first difference in a reply or in the stored state
// (TTL included) fails.
func TestScriptsAreExact(t *testing.T) {
	for _, script := range scenario.Scripts() {
		if script == "multi" || script == "concurrency" {
			continue // their keys and arguments differ: TestMultiIsExact, TestConcurrencyMatchesModel
		}
		t.Run(script, func(t *testing.T) {
			t.Parallel() // each twin has its own servers and Lua states
			cfgs := adversarial(script)
			rng := rand.New(rand.NewSource(1))
			accepted, calls := 0, 0
			for _, base := range []int64{scenario.T0, 1700000000000000, maxTime - maxSkew} {
				for i := 0; i < len(cfgs); i += 1 + rng.Intn(3) {
					w := newTwin(t, script, base)
					accepted += runExact(w, rng, cfgs[i], cfgs)
					calls += w.calls
				}
			}
			if accepted < 1000 {
				t.Fatalf("only %d calls were accepted: the search proves little", accepted)
			}
			t.Logf("%d calls compared, %d accepted", calls, accepted)
		})
	}
}

// runExact sends a sequence of calls on one key and returns how many were
// accepted (not an error reply).
func runExact(w *twin, rng *rand.Rand, cfg config, all []config) int {
	accepted := 0
	server := w.lua.Now()
	limit, _ := strconv.ParseInt(cfg[0], 10, 64)
	period, _ := strconv.ParseInt(cfg[len(cfg)-1], 10, 64)
	if isBatch(w.script) {
		period, _ = strconv.ParseInt(cfg[2], 10, 64)
	}
	for i := 0; i < 12; i++ {
		switch rng.Intn(4) {
		case 0:
			server += 1 + rng.Int63n(1000)
		case 1:
			server += rng.Int63n(period*1000 + 1)
		case 2:
			server += rng.Int63n(period*1000/max(limit, 1) + 2)
		}
		server = min(server, maxTime-maxSkew)
		w.setTime(server)
		now := "0"
		if rng.Intn(2) == 0 {
			now = strconv.FormatInt(min(maxTime, max(1, server+rng.Int63n(2*maxSkew+1)-maxSkew)), 10)
		}
		var cost int64
		switch rng.Intn(4) {
		case 0:
		case 1:
			cost = limit
		case 2:
			cost = rng.Int63n(limit + 2)
		default:
			cost = 1 + rng.Int63n(max(1, limit/7))
		}
		c := cfg
		if rng.Intn(10) == 0 {
			c = all[rng.Intn(len(all))] // the limit changes while the key lives
		}
		if w.script == "gcra" && rng.Intn(4) == 0 {
			// A reservation settled: a refund or a charge, into debt too.
			c = append(config(nil), c...)
			c[3] = [...]string{"refund", "charge"}[rng.Intn(2)]
		}
		if w.script == "token_bucket" && rng.Intn(4) == 0 {
			c = append(config(nil), c...)
			c[3] += [...]string{"_refund", "_charge"}[rng.Intn(2)]
		}
		// Now and then a deadline the server's TIME has just reached, or not.
		deadline := func() string {
			if rng.Intn(8) == 0 {
				return strconv.FormatInt(server+rng.Int63n(3)-1, 10)
			}
			return "0"
		}
		call := callArgs{lim: c, now: now, reqs: []request{{strconv.FormatInt(cost, 10), deadline()}}}
		// A third of a batch script's calls are batches of 2 to 4, which the
		// model decides one request at a time.
		if isBatch(w.script) && rng.Intn(3) == 0 {
			for n := 1 + rng.Intn(3); n > 0; n-- {
				call.reqs = append(call.reqs, request{strconv.FormatInt(rng.Int63n(limit+2), 10), deadline()})
			}
		}
		argv := call.argv(w.script)
		if settlesAfter(w.script) && rng.Intn(4) == 0 {
			// A reservation settled: a refund or a charge, into debt too;
			// the windows' at, a recent instant or one long gone.
			argv = append(argv, [...]string{"refund", "charge"}[rng.Intn(2)])
			if w.script != "leaky_bucket" {
				at := server - rng.Int63n(3*period*1000+1)
				if rng.Intn(3) == 0 {
					at = server + rng.Int63n(maxSkew+1)
				}
				if v := w.lua.get("k"); v != nil && v.kind == "zset" && rng.Intn(2) == 0 {
					// The log's refund removes members at at: an instant
					// that holds some.
					for _, score := range v.zset {
						at = int64(score)
						break
					}
				}
				argv = append(argv, strconv.FormatInt(min(maxTime, max(1, at)), 10))
			}
		}
		if _, err := w.call([]string{"k"}, argv); err == nil {
			accepted++
		}
	}
	return accepted
}

// TestTokenBucketCreditEdges drains a smooth bucket, then asks for k tokens
// 1 µs before and exactly when the k-th is credited, for every k whose
// credit instant k*period/rate sits a few units off a whole µs: the cases
// where floor((now-ts)*rate/period) in doubles admits a token early (the
// audit's over-admission) or ceil gives a wait 1 µs short.
func TestTokenBucketCreditEdges(t *testing.T) {
	probes := 0
	for _, cfg := range adversarial("token_bucket") {
		if cfg[3] != "smooth" {
			continue
		}
		capacity, _ := strconv.ParseInt(cfg[0], 10, 64)
		rate, _ := strconv.ParseInt(cfg[1], 10, 64)
		period, _ := strconv.ParseInt(cfg[2], 10, 64)
		p := period * 1000
		for _, k := range Edges(p, rate, capacity) {
			w := newTwin(t, "token_bucket", scenario.T0)
			at := int64(scenario.T0)
			argv := func(cost, now int64) []string {
				return oneCall("token_bucket", cfg, strconv.FormatInt(cost, 10), strconv.FormatInt(now, 10), "0")
			}
			if _, err := w.call([]string{"k"}, argv(capacity, at)); err != nil {
				break // the fill time is out of bounds
			}
			credit := mulDivCeil(k, p, rate)
			for _, d := range []int64{credit - 1, credit} {
				server := at + d - maxSkew/2 // the caller runs ahead: the key lives
				if server < w.lua.Now() {
					server = w.lua.Now()
				}
				c := w.lua.Clone()
				g := w.gold.Clone()
				c.SetTime(server)
				g.SetTime(server)
				probe := &twin{t: t, script: w.script, src: w.src, lua: c, gold: g, model: w.model}
				probe.call([]string{"k"}, argv(k, at+d))
				probes++
			}
		}
	}
	if probes < 200 {
		t.Fatalf("only %d probes", probes)
	}
}

// probe sends one call to copies of both servers at the given server time,
// so the sequence they hold stays as it was.
func (w *twin) probe(server int64, argv []string) {
	w.t.Helper()
	c, g := w.lua.Clone(), w.gold.Clone()
	c.SetTime(max(server, w.lua.Now()))
	g.SetTime(max(server, w.lua.Now()))
	(&twin{t: w.t, script: w.script, src: w.src, lua: c, gold: g, model: w.model}).call([]string{"k"}, argv)
}

// TestSlidingWindowCounterEdges fills a window with n, then, in the next
// window, peeks where ceil(n*(window-elapsed)/window) is decided by a
// product's last digit, and asks for costs whose room*window/n is too.
func TestSlidingWindowCounterEdges(t *testing.T) {
	probes := 0
	for i, cfg := range adversarial("sliding_window_counter") {
		if i%3 != 0 {
			continue
		}
		limit, _ := strconv.ParseInt(cfg[0], 10, 64)
		window, _ := strconv.ParseInt(cfg[1], 10, 64)
		W := window * 1000
		for _, n := range []int64{limit, max(1, limit-1), max(1, limit/3)} {
			w := newTwin(t, "sliding_window_counter", scenario.T0)
			start := (int64(scenario.T0)/W + 1) * W
			if start+2*W > maxTime-maxSkew {
				continue
			}
			argv := func(cost, now int64) []string {
				return []string{cfg[0], cfg[1], strconv.FormatInt(cost, 10), strconv.FormatInt(now, 10), "0"}
			}
			w.setTime(start)
			if _, err := w.call([]string{"k"}, argv(n, start)); err != nil {
				t.Fatal(err)
			}
			next := start + W
			for _, x := range Edges(n, W, W-1) {
				w.probe(next+W-x-maxSkew/2, argv(0, next+W-x))
				probes++
			}
			for _, room := range Edges(W, n, min(n-1, limit-1)) {
				w.probe(next-maxSkew/2, argv(limit-room, next))
				probes++
			}
		}
	}
	if probes < 200 {
		t.Fatalf("only %d probes", probes)
	}
}

// TestRateChangeEdges fills a leaky bucket and a GCRA key at one rate, then
// calls at another where the water (or the TAT's lead) left over is a part
// unit whose conversion, part*new/old, is decided by a product's last digit.
func TestRateChangeEdges(t *testing.T) {
	pairs := [][2][3]int64{ // {capacity, rate, period} before and after
		{{29, 3, 1e11}, {69, 7, 1e11}},
		{{69, 7, 1e11}, {29, 3, 99_999_999_989}},
		{{9, 999_999_937, 1e11}, {10, 999_999_999, 99_999_999_989}},
		{{1e9, 1, 1000}, {1e9, 3, 7}},
		{{1, 3, 86_400_000}, {1, 7, 1e8}},
	}
	probes := 0
	for _, script := range []string{"leaky_bucket", "gcra"} {
		for _, pr := range pairs {
			was := ceilDiv(pr[0][2]*1000, pr[0][1])
			unit := ceilDiv(pr[1][2]*1000, pr[1][1])
			s := func(v int64) string { return strconv.FormatInt(v, 10) }
			argv := func(c [3]int64, cost, now int64) []string {
				lim := []string{s(c[0]), s(c[1]), s(c[2])}
				if isBatch(script) {
					lim = append(lim, "all")
				}
				return oneCall(script, lim, s(cost), s(now), "0")
			}
			w := newTwin(t, script, scenario.T0)
			t0 := int64(scenario.T0)
			if _, err := w.call([]string{"k"}, argv(pr[0], 1, t0)); err != nil {
				t.Fatal(err)
			}
			// One unit poured at t0: its water (or the TAT's lead) is
			// rem µs at t0 + was - rem.
			for _, rem := range Edges(unit, was, was-1) {
				at := t0 + was - rem
				w.probe(at, argv(pr[1], 0, at))
				w.probe(at, argv(pr[1], 1, at))
				probes += 2
			}
		}
	}
	if probes < 100 {
		t.Fatalf("only %d probes", probes)
	}
}

// callForm sends a call of 2 or more keys to a script that takes its
// multi-key form itself, and holds it to the model run call by call.
func (w *twin) callForm(keys, argv []string) error {
	w.t.Helper()
	got, err := w.lua.Eval(w.src, keys, argv)
	calls, wantErr := formCalls(keys, argv)
	if !sameReply(err, wantErr) {
		w.t.Fatalf("%s %v %v at %d (call %d): script says (%v, %v), the form's layout %v", w.script, keys, argv, w.lua.Now(), w.calls, got, err, wantErr)
	}
	if err != nil {
		return err
	}
	els, _ := got.([]any)
	if len(els) != len(calls) {
		w.t.Fatalf("%s %v: %d elements for %d calls", w.script, argv, len(els), len(calls))
	}
	for i, c := range calls {
		want, wantErr := w.model(w.gold, c.keys, c.argv)
		e, isErr := els[i].(ErrorReply)
		var gotErr error
		if isErr {
			gotErr = e
		}
		if !sameReply(gotErr, wantErr) {
			w.t.Fatalf("%s %v at %d: element %d is %v, the model's call %v", w.script, argv, w.lua.Now(), i, els[i], wantErr)
		}
		if !isErr {
			g := make([]int64, len(els[i].([]any)))
			for j, v := range els[i].([]any) {
				g[j] = v.(int64)
			}
			if diff := cmp.Diff(want, g); diff != "" {
				w.t.Fatalf("%s %v at %d: element %d (-model +script):\n%s", w.script, argv, w.lua.Now(), i, diff)
			}
		}
	}
	if a, b := w.lua.Snapshot(), w.gold.Snapshot(); !a.Equal(b) {
		w.t.Fatalf("%s %v at %d (call %d): state (-model +script):\n%s", w.script, argv, w.lua.Now(), w.calls, cmp.Diff(b.String(), a.String()))
	}
	return nil
}
