package luatest

import (
	"fmt"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// FuzzMulti: any state at up to four keys and any ARGV get either an error
// reply that changes nothing, or a reply that keeps multi's promises. Each
// call is checked against the model (reply, state, TTL), and besides:
//   - an error, a denial and a peek send no write and change no key;
//   - the reply has two numbers and three per key; allowed is 1 exactly
//     when no limit waits; denied names the limit with the longest wait
//     (-1 first, the first of equals), 0 when allowed;
//   - remaining and reset_after are never negative;
//   - the longest wait is exact: at the caller's clock plus it, the same
//     call passes; 1 ms earlier it is denied while the binding key lives;
//   - with one set of limits throughout on keys that started empty, no
//     limit admits more than gcra's bound, whatever the others did.
//
// state is one line per key, k1:{f} to k4:{f}, as FuzzGCRA takes it
// ("string <value>", "hash f v", "zset score member", "list", "" for
// none). calls is one call a line: the µs the server's clock moves first,
// then ARGV split by tabs; "adv#n" sends n keys (0 to 17, the last
// repeated when n > 4), else one key per three numbers after cost, now and the deadline;
// a clock or a deadline (ARGV[2] and ARGV[3]) written "~n" is the server's
// clock plus n. seed draws 40 more calls at the last limits accepted.
func FuzzMulti(f *testing.F) {
	t0 := strconv.FormatInt(scenario.T0, 10)
	line := func(adv string, argv ...string) string { return adv + "\t" + strings.Join(argv, "\t") }
	two := []string{"2", "1", "1000", "3", "3", "60000"}
	with := func(cost, now string, lims ...string) []string { return append([]string{cost, now, "0"}, lims...) }
	due := func(cost, now, deadline string, lims ...string) []string {
		return append([]string{cost, now, deadline}, lims...)
	}
	for i, s := range []struct{ state, calls string }{
		{"", line("0", with("1", "0", two...)...)},
		{"", strings.Join([]string{line("0", with("1", "0", two...)...), line("0", with("1", "0", two...)...), line("0", with("1", "0", two...)...), line("1000000", with("1", "~0", two...)...)}, "\n")},
		{"", line("0", with("3", "0", "1000000000", "999999937", "100000000000", "9", "999999937", "100000000000")...)},
		{"string\t" + scenario.GCRAState(scenario.T0+200000, 200000, 200000) + "\nstring\talice", line("0", with("1", "0", two...)...)},
		// gcra's untagged state of the last version, a leaky bucket's, and
		// a state dated past TIME + 60 s.
		{"string\t" + t0 + "200000/200000", line("0", with("1", "0", two...)...)},
		{"\nstring\t" + scenario.LeakyBucketState(scenario.T0, 200000, 200000), line("0", with("1", "0", two...)...)},
		{"\nstring\t" + scenario.GCRAState(scenario.T0+60000001+1000000, 1000000, 1000000), line("0", with("1", "0", two...)...)},
		// Issue 15.4: deadlines passed, reached and not yet reached.
		{"", strings.Join([]string{line("0", due("1", "0", "~-1", two...)...), line("0", due("1", "0", "~0", two...)...),
			line("0", due("1", "0", "~1", two...)...), line("0", due("1", "~-5", "~1000", two...)...)}, "\n")},
		{"\nhash\tn\t1", line("0", with("0", "0", two...)...)},
		{"", strings.Join([]string{line("0#0", "1", "0", "0"), line("0#17", with("1", "0", two...)...), line("0#5", with("1", "0", two...)...),
			line("0", with("1e0", "0", two...)...), line("0", with("1", "~60000001", two...)...), line("0", with("1", "0", "2", "1001", "1")...)}, "\n")},
		// A late caller, then an early one, on three limits.
		{"", strings.Join([]string{line("0", with("2", "~10000000", "5", "5", "1000", "4", "3", "1", "10", "7", "300")...),
			line("0", with("1", "~-5000000", "5", "5", "1000", "4", "3", "1", "10", "7", "300")...)}, "\n")},
		// Limits that change while the keys live.
		{"", strings.Join([]string{line("0", with("2", "0", two...)...), line("500000", with("1", "0", "1", "1", "1000", "30", "3", "60000")...)}, "\n")},
	} {
		f.Add(s.state, s.calls, int64(i))
	}
	f.Fuzz(func(t *testing.T, state, calls string, seed int64) {
		fz := &multiFuzz{t: t, w: newTwin(t, "multi", scenario.T0), fresh: true}
		for i, st := range strings.SplitN(state, "\n", 4) {
			if v := fuzzValue(st); v != nil {
				k := fmt.Sprintf("k%d:{f}", i+1)
				fz.w.lua.data[k] = v.clone()
				fz.w.gold.data[k] = v.clone()
				fz.fresh = false
			}
		}
		lines := strings.Split(calls, "\n")
		for _, ln := range lines[:min(len(lines), 40)] {
			fields := strings.Split(ln, "\t")
			if len(fields) < 2 {
				continue
			}
			adv, n, _ := strings.Cut(fields[0], "#")
			d, _ := strconv.ParseInt(adv, 10, 64)
			fz.advance(d)
			argv := fields[1:]
			for i := 1; i < min(3, len(argv)); i++ {
				argv[i] = fuzzClock(argv[i], fz.w.lua.Now()) // the clock, the deadline
			}
			keys := max(1, min(4, (len(argv)-3)/3))
			if n != "" {
				keys, _ = strconv.Atoi(n)
				keys = max(0, min(17, keys))
			}
			fz.call(multiKeys(keys), argv)
		}
		fz.random(rand.New(rand.NewSource(seed)), 40)
		fz.checkBound()
	})
}

// fuzzValue reads a key's state as FuzzGCRA's preset does; nil for none.
func fuzzValue(state string) *value {
	f := strings.Split(state, "\t")
	v := &value{kind: f[0], hash: map[string]string{}, zset: map[string]float64{}}
	switch f[0] {
	case "string":
		v.str = strings.Join(f[1:], "\t")
	case "hash":
		for i := 1; i+1 < len(f); i += 2 {
			v.hash[f[i]] = f[i+1]
		}
	case "zset":
		for i := 1; i+1 < len(f); i += 2 {
			if s, err := strconv.ParseFloat(f[i], 64); err == nil && s == s {
				v.zset[f[i+1]] = s
			}
		}
	case "list":
	default:
		return nil
	}
	return v
}

// multiKeys are k1:{f} to k4:{f}; beyond four the last repeats (a key
// twice, which multi refuses).
func multiKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%d:{f}", min(i, 3)+1)
	}
	return out
}

type multiFuzz struct {
	t       *testing.T
	w       *twin
	fresh   bool     // every key started empty
	limits  []string // ARGV after cost, now and deadline of the last call accepted
	changed bool     // the limits changed between accepted calls
	admits  []fuzzAdmit
	latest  int64
}

func (fz *multiFuzz) advance(d int64) {
	now := min(maxTime-maxSkew, fz.w.lua.Now()+max(0, min(d, 1e13)))
	fz.w.setTime(now)
	fz.latest = max(fz.latest, now)
}

func (fz *multiFuzz) call(keys, argv []string) {
	t := fz.t
	t.Helper()
	before := fz.w.lua.Snapshot()
	got, err := fz.w.call(keys, argv)
	peek := len(argv) > 0 && argv[0] == "0"
	var reply []int64
	if err == nil {
		reply = ints64(got)
	}
	if err != nil || peek || reply[0] == 0 {
		if after := fz.w.lua.Snapshot(); !before.Equal(after) {
			t.Fatalf("%v: an error, a denial or a peek changed a key:\n%s->\n%s", argv, before, after)
		}
		for _, c := range fz.w.lua.Commands() {
			if writes[strings.ToUpper(strings.Fields(c)[0])] {
				t.Fatalf("%v: an error, a denial or a peek sent %q", argv, c)
			}
		}
	}
	if err != nil {
		return
	}
	if len(reply) != 2+3*len(keys) {
		t.Fatalf("%v: %d numbers for %d keys: %v", argv, len(reply), len(keys), reply)
	}
	longest, binding := int64(0), int64(0)
	for i := range keys {
		rem, retry, reset := reply[2+3*i], reply[3+3*i], reply[4+3*i]
		if rem < 0 || reset < 0 || retry < -1 {
			t.Fatalf("%v: reply %v", argv, reply)
		}
		if retry != 0 && (binding == 0 || (longest != -1 && (retry == -1 || retry > longest))) {
			longest, binding = retry, int64(i+1)
		}
	}
	if reply[1] != binding || (reply[0] == 1) != (binding == 0) || (reply[0] != 0 && reply[0] != 1) {
		t.Fatalf("%v: reply %v, but the longest wait is limit %d's", argv, reply, binding)
	}
	if longest > 0 {
		fz.probe(keys, argv, longest, binding)
	}
	lims := argv[3:]
	if fz.limits != nil && strings.Join(fz.limits, " ") != strings.Join(lims, " ") {
		fz.changed = true
	}
	fz.limits = append([]string(nil), lims...)
	now, _ := strconv.ParseInt(argv[1], 10, 64)
	if now == 0 {
		now = fz.w.lua.Now()
	}
	fz.latest = max(fz.latest, now)
	if cost, _ := strconv.ParseInt(argv[0], 10, 64); reply[0] == 1 && cost > 0 {
		fz.admits = append(fz.admits, fuzzAdmit{sent: now, latest: fz.latest, cost: cost})
	}
}

// probe checks the longest wait on copies: the call passes after it, and
// not 1 ms before while the binding key lives.
func (fz *multiFuzz) probe(keys, argv []string, wait, binding int64) {
	t := fz.t
	t.Helper()
	src := fz.w.src
	for _, after := range []int64{wait - 1, wait} {
		c := fz.w.lua.Clone()
		c.SetTime(min(maxTime, c.Now()+after*1000))
		a := append([]string(nil), argv...)
		a[2] = "0" // the retry has a deadline of its own
		if now, _ := strconv.ParseInt(a[1], 10, 64); now != 0 {
			if now+after*1000 > maxTime {
				return
			}
			a[1] = strconv.FormatInt(now+after*1000, 10)
		}
		lives := c.get(keys[binding-1]) != nil
		got, err := c.Eval(src, keys, a)
		if err != nil {
			t.Fatalf("%v: waits %d ms, then %v", argv, wait, err)
		}
		ok := ints64(got)[0] == 1
		if after == wait && !ok || after < wait && ok && lives {
			t.Fatalf("%v: waits %d ms; %d ms later allowed=%v: %v", argv, wait, after, ok, got)
		}
	}
}

// random sends n calls at the last limits accepted (two of gcra's when
// none was), with costs around the smallest burst and callers' clocks.
func (fz *multiFuzz) random(rng *rand.Rand, n int) {
	lims := fz.limits
	if lims == nil {
		lims = []string{"5", "5", "1000", "10", "7", "300"}
	}
	if len(lims)%3 != 0 || len(lims) == 0 || len(lims) > 48 {
		return
	}
	most := int64(1e9)
	for i := 0; i < len(lims); i += 3 {
		b, err := strconv.ParseInt(lims[i], 10, 64)
		if err != nil || b < 1 {
			return
		}
		most = min(most, b)
	}
	for i := 0; i < n; i++ {
		fz.advance(rng.Int63n(300_000))
		now := "0"
		if rng.Intn(3) == 0 {
			now = strconv.FormatInt(fz.w.lua.Now()+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
		}
		cost := strconv.FormatInt(rng.Int63n(most+2), 10)
		deadline := "0"
		if rng.Intn(10) == 0 {
			deadline = strconv.FormatInt(fz.w.lua.Now()+rng.Int63n(3)-1, 10)
		}
		fz.call(multiKeys(len(lims)/3), append([]string{cost, now, deadline}, lims...))
	}
}

// checkBound: with one set of limits throughout and keys that started
// empty, each limit admits no more than gcra's bound over any run of
// admitted calls.
func (fz *multiFuzz) checkBound() {
	if !fz.fresh || fz.changed || fz.limits == nil {
		return
	}
	for i := 0; i+2 < len(fz.limits); i += 3 {
		l, ok := ints(fz.limits[i : i+3])
		if !ok {
			return
		}
		for j := range fz.admits {
			var sum int64
			for _, a := range fz.admits[j:] {
				sum += a.cost
				span := max(0, a.latest-fz.admits[j].sent)
				if b := fuzzLimits["gcra"].bound(l, span); big.NewInt(sum).Cmp(b) > 0 {
					fz.t.Fatalf("limit %d admitted %d within %d µs, bound %v (limits %v)", i/3+1, sum, span, b, fz.limits)
				}
			}
		}
	}
}
