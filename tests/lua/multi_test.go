package luatest

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// multi.lua is gcra.lua per key, all or nothing. Its model says exactly
// that: the arguments are read as multi.lua reads them, then every key is
// asked as gcra.lua would be, on copies, and only when every key has room
// are they all asked for real. The model is built from a gcra, so the same
// function, given gcra.lua itself, checks multi.lua against the script it
// claims to be (TestMultiIsGCRA), and given modelGCRA, against big-integer
// arithmetic (TestMultiIsExact, FuzzMulti).

func init() { models["multi"] = multiOf(modelGCRA) }

// multiOf builds multi from one gcra: a function with the shape of a model
// that reads and writes one key.
func multiOf(gcra model) model {
	return func(r *Redis, keys, argv []string) ([]int64, error) {
		a := args{argv: argv}
		cost := a.int(0, "cost", 0, 1e9)
		now := a.int(1, "now", 0, maxTime)
		deadline := a.int(2, "deadline", 0, maxTime)
		n := len(keys)
		if n == 0 || n > 16 {
			a.fail(fmt.Sprintf("BADARG takes 1 to 16 keys, one per limit, got %d", n))
		}
		type lim struct{ burst, rate, period int64 }
		lims := make([]lim, min(n, 16))
		seen := map[string]int{}
		for i := range lims {
			// An element that reads is kept even when an earlier one failed.
			elem := func(j int, what string, lo, hi int64) int64 {
				if j < len(argv) {
					if v, ok := decimal(argv[j], lo, hi); ok {
						return v
					}
				}
				return a.int(j, fmt.Sprintf("%s of limit %d", what, i+1), lo, hi)
			}
			lims[i] = lim{elem(3*i+3, "burst", 1, 1e9), elem(3*i+4, "rate", 1, 1e9), elem(3*i+5, "period", 1, 1e11)}
			if j, ok := seen[keys[i]]; ok {
				a.fail(fmt.Sprintf("BADARG keys %d and %d are the same key: each limit needs its own", j, i+1))
			}
			seen[keys[i]] = i + 1
		}
		if len(argv) != 3+3*n {
			a.fail(fmt.Sprintf("BADARG takes %d key(s) and %d arguments, got %d and %d", n, 3+3*n, n, len(argv)))
		}
		if err := a.err(); err != nil {
			return nil, err
		}
		for i, l := range lims {
			if l.rate > l.period*1000 {
				return nil, ErrorReply(fmt.Sprintf("BADARG rate of limit %d must be at most one per µs (period*1000)", i+1))
			}
			if mulSat(l.burst, ceilDiv(l.period*1000, l.rate)) > 1e15 {
				return nil, ErrorReply(fmt.Sprintf("BADARG burst*period/rate of limit %d must be at most 1e15 µs (31 years)", i+1))
			}
		}
		if _, _, err := clock(r, now, deadline); err != nil {
			return nil, err
		}
		s := func(v int64) string { return strconv.FormatInt(v, 10) }
		ask := func(rr *Redis, i int, c int64) ([]int64, error) {
			return gcra(rr, keys[i:i+1], oneCall("gcra", []string{s(lims[i].burst), s(lims[i].rate), s(lims[i].period), "all"}, s(c), argv[1], "0"))
		}
		reply := []int64{1, 0}
		worst := int64(0)
		for i := range lims {
			// What the key holds (a peek), and what cost would get; both on
			// copies, so nothing is written yet.
			peek, err := ask(r.Clone(), i, 0)
			if err != nil {
				code, _, _ := strings.Cut(err.Error(), " ")
				switch code {
				case "WRONGTYPE":
					return nil, ErrorReply(fmt.Sprintf("WRONGTYPE key %d holds another type of value; no key is written", i+1))
				case "BADSTATE":
					return nil, ErrorReply(fmt.Sprintf("BADSTATE key %d is not a GCRA state 2<tat><interval>, g<tat><interval>/<more> or g<tat><interval>=<lead>+<debt>; no key is written", i+1))
				}
				return nil, err
			}
			retry := peek[2]
			if cost > 0 {
				got, err := ask(r.Clone(), i, cost)
				if err != nil {
					return nil, err
				}
				retry = got[2]
			}
			if retry != 0 {
				reply[0] = 0
				if reply[1] == 0 || (worst != -1 && (retry == -1 || retry > worst)) {
					reply[1], worst = int64(i+1), retry
				}
			}
			reply = append(reply, peek[1], retry, peek[3])
		}
		if reply[0] == 0 || cost == 0 {
			return reply, nil
		}
		for i := range lims {
			got, err := ask(r, i, cost)
			if err != nil || got[0] != 1 {
				panic(fmt.Sprintf("limit %d had room on a copy but not for real: %v %v", i+1, got, err))
			}
			reply[3*i+2], reply[3*i+4] = got[1], got[3]
		}
		return reply, nil
	}
}

// gcraScript runs gcra.lua itself, as a model would be run.
func gcraScript(t *testing.T) model {
	src, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	return func(r *Redis, keys, argv []string) ([]int64, error) {
		got, err := r.Eval(src, keys, argv)
		if err != nil {
			return nil, err
		}
		out := make([]int64, len(got.([]any)))
		for i, v := range got.([]any) {
			out[i] = v.(int64)
		}
		return out, nil
	}
}

// multiLimits are limits small enough that random calls meet denials of
// every kind, with intervals that do and do not divide their periods.
var multiLimits = [][3]int64{{2, 1, 1000}, {3, 3, 60000}, {5, 5, 1000}, {10, 7, 300}, {4, 3, 1}, {1, 1, 500}, {20, 200, 1000}}

// multiRun sends n random calls on keys k1..kn of one hash tag, each over
// a random subset of the limits (in order, so a key keeps its limit unless
// the call changes it), with the server's clock and callers' clocks.
func multiRun(w *twin, rng *rand.Rand, calls int, lims [][3]int64) {
	server := w.lua.Now()
	for c := 0; c < calls; c++ {
		server = min(server+rng.Int63n(400_000), maxTime-maxSkew)
		w.setTime(server)
		now := "0"
		if rng.Intn(2) == 0 {
			now = strconv.FormatInt(server+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
		}
		var keys []string
		argv := []string{strconv.Itoa(rng.Intn(4)), now, "0"}
		for i, l := range lims {
			if rng.Intn(3) == 0 {
				continue
			}
			if rng.Intn(20) == 0 {
				l = multiLimits[rng.Intn(len(multiLimits))] // a changed limit
			}
			keys = append(keys, fmt.Sprintf("k%d:{u}", i+1))
			argv = append(argv, strconv.FormatInt(l[0], 10), strconv.FormatInt(l[1], 10), strconv.FormatInt(l[2], 10))
		}
		if len(keys) > 0 {
			w.call(keys, argv)
			if cmds := len(w.lua.Commands()); cmds > 1+2*len(keys) {
				w.t.Fatalf("%v: %d commands for %d keys: %v", argv, cmds, len(keys), w.lua.Commands())
			}
		}
	}
}

// TestMultiIsGCRA: multi.lua answers and writes exactly what gcra.lua,
// asked key by key (all or nothing), would: the same replies, the same
// state byte for byte, the same TTLs.
func TestMultiIsGCRA(t *testing.T) {
	gcra := gcraScript(t)
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		w := newTwin(t, "multi", scenario.T0)
		w.model = multiOf(gcra)
		var lims [][3]int64
		for i := 0; i < 1+rng.Intn(4); i++ {
			lims = append(lims, multiLimits[rng.Intn(len(multiLimits))])
		}
		multiRun(w, rng, 200, lims)
	}
}

// TestMultiIsExact: multi.lua against its big-integer model, over gcra's
// adversarial limits (products far past 2^53, rates that do not divide
// their periods, the largest bounds), costs up to and past each burst,
// and clocks near 2^52.
func TestMultiIsExact(t *testing.T) {
	// The configurations gcra.lua accepts: multi refuses the others before
	// it reads a key.
	var cfgs [][3]int64
	for _, c := range adversarial("gcra") {
		var l [3]int64
		for k := range l {
			l[k], _ = strconv.ParseInt(c[k], 10, 64)
		}
		if l[1] <= l[2]*1000 && mulSat(l[0], ceilDiv(l[2]*1000, l[1])) <= 1e15 {
			cfgs = append(cfgs, l)
		}
	}
	rng := rand.New(rand.NewSource(1))
	accepted := 0
	for _, base := range []int64{scenario.T0, maxTime - maxSkew} {
		for i := 0; i < 60; i++ {
			w := newTwin(t, "multi", base)
			var lims [][3]int64
			for j := 0; j < 1+rng.Intn(3); j++ {
				lims = append(lims, cfgs[rng.Intn(len(cfgs))])
			}
			for c := 0; c < 10; c++ {
				server := min(w.lua.Now()+rng.Int63n(lims[0][2]*1000+1), maxTime-maxSkew)
				w.setTime(server)
				now := "0"
				if rng.Intn(2) == 0 {
					now = strconv.FormatInt(min(maxTime, server+rng.Int63n(2*maxSkew+1)-maxSkew), 10)
				}
				cost := []int64{0, 1, lims[0][0], rng.Int63n(lims[0][0] + 2)}[rng.Intn(4)]
				argv := []string{strconv.FormatInt(cost, 10), now, "0"}
				var keys []string
				for j, l := range lims {
					keys = append(keys, fmt.Sprintf("k%d:{x}", j))
					argv = append(argv, strconv.FormatInt(l[0], 10), strconv.FormatInt(l[1], 10), strconv.FormatInt(l[2], 10))
				}
				if _, err := w.call(keys, argv); err == nil {
					accepted++
				}
			}
		}
	}
	if accepted < 500 {
		t.Fatalf("only %d calls were accepted: the search proves little", accepted)
	}
}

// TestMultiNeverOverAdmits: over random calls, in order and with callers'
// clocks up to 3 gaps late, no limit ever admits more than gcra's bound,
// whichever limits the other calls carried.
func TestMultiNeverOverAdmits(t *testing.T) {
	lims := []struct {
		burst, rate int
		period      time.Duration
	}{{5, 5, time.Second}, {10, 7, 300 * time.Millisecond}, {3, 1, 2 * time.Second}}
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		for _, jitter := range []int64{0, 3 * 100_000} {
			src, _ := Source("multi")
			r := New(scenario.T0)
			type admit struct{ sent, latest, cost int64 }
			admitted := make([][]admit, len(lims))
			at, latest := int64(scenario.T0), int64(0)
			for c := 0; c < 300; c++ {
				at += rng.Int63n(100_001)
				sent := at - rng.Int63n(jitter+1)
				latest = max(latest, sent)
				r.SetTime(max(r.Now(), latest-jitter))
				cost := int64(rng.Intn(4))
				argv := []string{strconv.FormatInt(cost, 10), strconv.FormatInt(sent, 10), "0"}
				var keys []string
				var which []int
				for i, l := range lims {
					if rng.Intn(2) == 0 {
						continue
					}
					keys = append(keys, fmt.Sprintf("k%d:{n}", i))
					which = append(which, i)
					argv = append(argv, scenario.Args(l.burst, l.rate, l.period)...)
				}
				if len(keys) == 0 {
					continue
				}
				got, err := r.Eval(src, keys, argv)
				if err != nil {
					t.Fatal(err)
				}
				if got.([]any)[0] == int64(1) && cost > 0 {
					for _, i := range which {
						admitted[i] = append(admitted[i], admit{sent, latest, cost})
					}
				}
			}
			for i, l := range lims {
				bound := gcraBound(l.burst, l.rate, l.period)
				for j := range admitted[i] {
					sum := int64(0)
					for _, a := range admitted[i][j:] {
						sum += a.cost
						span := time.Duration(a.latest-admitted[i][j].sent) * time.Microsecond
						if b := bound(span); sum > int64(b) {
							t.Fatalf("seed %d jitter %d: limit %d admitted %d within %v, bound %d", seed, jitter, i, sum, span, b)
						}
					}
				}
			}
		}
	}
}

// TestMultiArgumentNames: a bad number of any limit is named by its limit
// and what it is; the keys are 1 to 16, each once.
func TestMultiArgumentNames(t *testing.T) {
	src, err := Source("multi")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("k%d:{a}", i+1)
		}
		return out
	}
	argv := func(n int) []string {
		out := []string{"1", "0", "0"}
		for i := 0; i < n; i++ {
			out = append(out, "5", "5", "1000")
		}
		return out
	}
	r := New(scenario.T0)
	for _, n := range []int{1, 3, 16} {
		for j := 3; j < 3+3*n; j++ {
			what := []string{"burst", "rate", "period"}[(j-3)%3]
			hi := map[string]string{"burst": "1000000000", "rate": "1000000000", "period": "100000000000"}[what]
			a := argv(n)
			a[j] = "x"
			want := fmt.Sprintf("BADARG %s of limit %d must be an integer from 1 to %s, got 'x'", what, (j-3)/3+1, hi)
			expectBadArg(t, r, src, keys(n), a, want)
		}
	}
	expectBadArg(t, r, src, nil, []string{"1", "0", "0"}, "BADARG takes 1 to 16 keys, one per limit, got 0")
	expectBadArg(t, r, src, keys(17), argv(17), "BADARG takes 1 to 16 keys, one per limit, got 17")
	for _, dup := range [][2]int{{1, 2}, {1, 3}, {2, 16}, {15, 16}} {
		k := keys(16)
		k[dup[1]-1] = k[dup[0]-1]
		expectBadArg(t, r, src, k, argv(16), fmt.Sprintf("BADARG keys %d and %d are the same key: each limit needs its own", dup[0], dup[1]))
	}
	// Sixteen distinct keys are taken, and each is written.
	got, err := r.Eval(src, keys(16), argv(16))
	if err != nil || got.([]any)[0] != int64(1) || len(got.([]any)) != 2+3*16 {
		t.Fatalf("16 limits: got (%v, %v)", got, err)
	}
	for _, k := range keys(16) {
		if r.PTTL(k) != 200 {
			t.Errorf("%s: PTTL %d, want 200", k, r.PTTL(k))
		}
	}
}

// TestMultiStateAtAnyKey: foreign data at any one key is an error naming
// that key, and no key is written, those before it included.
func TestMultiStateAtAnyKey(t *testing.T) {
	src, err := Source("multi")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a:{s}", "b:{s}", "c:{s}"}
	argv := []string{"1", "0", "0", "5", "5", "1000", "5", "5", "1000", "5", "5", "1000"}
	for bad := range keys {
		for _, v := range []*value{
			{kind: "string", str: "alice"},
			{kind: "string", str: fmt.Sprintf("%d/200000/%d", scenario.T0+1, scenario.T0+2)},
			{kind: "hash", hash: map[string]string{"tokens": "1"}},
			{kind: "zset", zset: map[string]float64{"a": 1}},
		} {
			r := New(scenario.T0)
			if _, err := r.Eval(src, keys, argv); err != nil {
				t.Fatal(err)
			}
			r.SetTime(scenario.T0 + 100)
			r.data[keys[bad]] = v.clone()
			code := "BADSTATE"
			if v.kind != "string" {
				code = "WRONGTYPE"
			}
			for _, cost := range []string{"1", "0"} {
				a := append([]string(nil), argv...)
				a[0] = cost
				expectBadArg(t, r, src, keys, a, fmt.Sprintf("%s key %d ", code, bad+1))
				for _, c := range r.Commands() {
					if writes[strings.ToUpper(strings.Fields(c)[0])] {
						t.Errorf("key %d %s: sent %q", bad+1, v.kind, c)
					}
				}
			}
		}
	}
}

// TestMultiDenialIsTheLongestWait: after a denial, the call passes once
// the longest retry_after has passed, and not 1 ms before (while its keys
// live), which is what makes a denial's single wait exact.
func TestMultiDenialIsTheLongestWait(t *testing.T) {
	src, err := Source("multi")
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		r := New(scenario.T0)
		keys := []string{"a:{w}", "b:{w}", "c:{w}"}
		for c := 0; c < 100; c++ {
			r.SetTime(r.Now() + rng.Int63n(200_000))
			argv := []string{strconv.Itoa(1 + rng.Intn(3)), "0", "0"}
			for _, l := range multiLimits[:3] {
				argv = append(argv, strconv.FormatInt(l[0], 10), strconv.FormatInt(l[1], 10), strconv.FormatInt(l[2], 10))
			}
			got, err := r.Eval(src, keys, argv)
			if err != nil {
				t.Fatal(err)
			}
			reply := ints64(got)
			if reply[0] == 1 {
				continue
			}
			longest := reply[3*reply[1]]
			for i := 0; i < 3; i++ {
				if w := reply[3*i+3]; longest != -1 && (w == -1 || w > longest) {
					t.Fatalf("%v: limit %d waits %d, longer than the binding limit %d's %d", argv, i+1, w, reply[1], longest)
				}
			}
			if longest == -1 {
				continue
			}
			for _, after := range []int64{longest - 1, longest} {
				c := r.Clone()
				c.SetTime(r.Now() + after*1000)
				lives := c.get(keys[reply[1]-1]) != nil
				p, err := c.Eval(src, keys, argv)
				if err != nil {
					t.Fatal(err)
				}
				ok := ints64(p)[0] == 1
				if after == longest && !ok || after < longest && ok && lives {
					t.Fatalf("%v: denied with longest wait %d ms; %d ms later allowed=%v", argv, longest, after, ok)
				}
				probes++
			}
		}
	}
	if probes < 100 {
		t.Fatalf("only %d probes", probes)
	}
}

func ints64(v any) []int64 {
	out := make([]int64, len(v.([]any)))
	for i, el := range v.([]any) {
		out[i] = el.(int64)
	}
	return out
}

// TestMultiModelAgreesWithScenarios keeps the model honest on the tables.
func TestMultiModelAgreesWithScenarios(t *testing.T) {
	for _, sc := range scenario.All() {
		if sc.Script != "multi" {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			w := newTwin(t, "multi", scenario.T0)
			for k, v := range sc.Strings {
				w.lua.Set(k, v)
				w.gold.Set(k, v)
			}
			if sc.Preset != nil {
				for _, p := range sc.Preset(scenario.T0) {
					w.lua.Put(p)
					w.gold.Put(p)
				}
			}
			for _, st := range sc.Steps {
				w.setTime(max(w.lua.Now(), st.ServerAt()))
				got, err := w.call(sc.Keys, sc.Argv(st))
				if st.Want != nil && err == nil {
					if diff := cmp.Diff(st.Want, ints64(got)); diff != "" {
						t.Fatalf("%v: (-table +script):\n%s", sc.Argv(st), diff)
					}
				}
			}
		})
	}
}
