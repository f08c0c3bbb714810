package luatest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// The multi-key form (luagen's @multi): a script's text as the body of a
// function, and a driver that runs 1 to 64 calls of it in one call. Its
// promise: each call is answered exactly as a call of its own at that
// instant, an error in one call is that call's element while the others
// run, and a bad layout is a BADARG that runs nothing. The form is taken
// from the manifest (bindings/scripts.json), the text other clients build
// it from.

// mkCall is one call of a script: its keys and its ARGV.
type mkCall struct{ keys, argv []string }

// multiKeyForms reads the manifest: each script's multi-key form, checked
// against the sha1 the manifest gives it.
func multiKeyForms(t testing.TB) (forms map[string]string, maxCalls int) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "bindings", "scripts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MultiForm *struct {
			Before   string `json:"before"`
			After    string `json:"after"`
			MaxCalls int    `json:"max_calls"`
		} `json:"multi_form"`
		Scripts []struct {
			Name  string `json:"name"`
			Multi *struct {
				SHA1 string `json:"sha1"`
			} `json:"multi"`
		} `json:"scripts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.MultiForm == nil {
		t.Fatal("bindings/scripts.json has no multi_form")
	}
	forms = map[string]string{}
	for _, s := range m.Scripts {
		if s.Multi == nil {
			t.Fatalf("%s has no multi-key form in the manifest", s.Name)
		}
		src, err := Source(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		form := m.MultiForm.Before + src + m.MultiForm.After
		if sum := sha1.Sum([]byte(form)); hex.EncodeToString(sum[:]) != s.Multi.SHA1 {
			t.Fatalf("%s: the manifest's multi sha1 %s is not sha1(before+source+after) %x", s.Name, s.Multi.SHA1, sum)
		}
		forms[s.Name] = form
	}
	return forms, m.MultiForm.MaxCalls
}

// multiKeyLayout lays calls out as the form takes them: KEYS, every
// call's keys in turn; ARGV, per call, its key count, its argument count
// and its arguments.
func multiKeyLayout(calls []mkCall) (keys, argv []string) {
	for _, c := range calls {
		keys = append(keys, c.keys...)
		argv = append(argv, strconv.Itoa(len(c.keys)), strconv.Itoa(len(c.argv)))
		argv = append(argv, c.argv...)
	}
	return keys, argv
}

// asElement is a call's reply as an element of the form's reply: its
// value, or its error reply.
func asElement(got any, err error) any {
	if err != nil {
		return ErrorReply(err.Error())
	}
	return got
}

// mkKeys are the keys the model check draws from, one {hash tag}: three
// for the script's own state, mkWrong holding a hash (the wrong type for
// every script) and mkForeign another script's state of the script's type.
var mkKeys = []string{"a:{mk}", "b:{mk}", "c:{mk}"}

const (
	mkWrong   = "wrong:{mk}"
	mkForeign = "foreign:{mk}"
)

// mkForeignState is what mkForeign holds, per script: state of the
// script's own Redis type that another script wrote.
func mkForeignState(script string) string {
	switch script {
	case "concurrency":
		return "zset\t1767225600000000\t1767225600000000:1" // a sliding log's member
	case "sliding_window_log":
		return "zset\t1767225700000000\tlease-a" // a lease
	case "token_bucket":
		return "string\t" + scenario.GCRAShortState(scenario.T0+100000, 100000)
	}
	return "string\t" + scenario.TokenBucketState(scenario.T0, 3)
}

// mkGen draws random calls of one script at the server's clock now.
type mkGen struct {
	rng    *rand.Rand
	script string
	last   string // the key drawn before
}

func (g *mkGen) pick(ss ...string) string { return ss[g.rng.Intn(len(ss))] }

// key is one of mkKeys, now and then mkWrong or mkForeign; half the time
// the key drawn before, so that calls on one key in a row (a hot key's
// batch, which the scripts that take the form themselves read and write
// once) come often.
func (g *mkGen) key() string {
	if g.last != "" && g.rng.Intn(2) == 0 {
		return g.last
	}
	switch g.rng.Intn(16) {
	case 0:
		g.last = mkWrong
	case 1:
		g.last = mkForeign
	default:
		g.last = mkKeys[g.rng.Intn(len(mkKeys))]
	}
	return g.last
}

// clock is 0 (the server's clock) or a caller's, mostly within a few
// seconds of now, rarely past the 60 s bound (a BADARG).
func (g *mkGen) clock(now int64) string {
	switch g.rng.Intn(6) {
	case 0, 1:
		return strconv.FormatInt(now+g.rng.Int63n(10_000_001)-5_000_000, 10)
	case 2:
		if g.rng.Intn(10) == 0 {
			return strconv.FormatInt(now+maxSkew+1+g.rng.Int63n(1000), 10)
		}
	}
	return "0"
}

// deadline is mostly none, sometimes just before or after now.
func (g *mkGen) deadline(now int64) string {
	if g.rng.Intn(8) == 0 {
		return strconv.FormatInt(now+g.rng.Int63n(5)-2, 10)
	}
	return "0"
}

func (g *mkGen) cost(most int) string {
	if g.rng.Intn(3) == 0 {
		return strconv.Itoa(g.rng.Intn(3))
	}
	return strconv.Itoa(g.rng.Intn(most + 3))
}

// call draws one call; now and then one of its arguments is made bad (a
// word, an argument dropped or added), which the script answers BADARG.
func (g *mkGen) call(now int64) mkCall {
	c := g.goodCall(now)
	switch g.rng.Intn(24) {
	case 0:
		c.argv[g.rng.Intn(len(c.argv))] = g.pick("x", "", "+1", "1.5", "-1")
	case 1:
		c.argv = c.argv[:len(c.argv)-1]
	case 2:
		c.argv = append(c.argv, "1")
	}
	return c
}

func (g *mkGen) goodCall(now int64) mkCall {
	r := g.rng
	ms := strconv.FormatInt(now/1000, 10)
	at := func() string { return strconv.FormatInt(now-r.Int63n(3_000_000), 10) }
	switch g.script {
	case "gcra", "token_bucket":
		lims := batchLimits[g.script]
		lim := append([]string(nil), lims[r.Intn(len(lims)-1)]...) // not the huge one: costs would rarely pass
		if g.script == "gcra" {
			lim[3] = g.pick("all", "all", "at_most", "refund", "charge")
		} else if r.Intn(2) == 0 {
			lim[3] += g.pick("_refund", "_charge")
		}
		most, _ := strconv.Atoi(lim[0])
		argv := append(append([]string(nil), lim[:3]...), g.clock(now), lim[3])
		for n := 1 + r.Intn(3); n > 0; n-- { // the script's own batch: 1 to 3 requests
			argv = append(argv, g.cost(most), g.deadline(now))
		}
		return mkCall{[]string{g.key()}, argv}
	case "leaky_bucket":
		lim := [][]string{{"5", "10", "1000"}, {"3", "1", "1000"}, {"10", "7", "300"}}[r.Intn(3)]
		most, _ := strconv.Atoi(lim[0])
		argv := append(append([]string(nil), lim...), g.cost(most), g.clock(now), g.deadline(now))
		if r.Intn(3) == 0 {
			argv = append(argv, g.pick("refund", "charge"))
		}
		return mkCall{[]string{g.key()}, argv}
	case "fixed_window":
		lim := [][]string{{"5", "1000"}, {"3", "300"}, {"10", "60000"}}[r.Intn(3)]
		most, _ := strconv.Atoi(lim[0])
		argv := append(append([]string(nil), lim...), g.cost(most), g.clock(now), g.deadline(now))
		switch r.Intn(5) {
		case 0:
			argv = append(argv, "all", "0", "0", "0", "0")
		case 1:
			argv = append(argv, g.pick("refund", "charge"), at(), "0", "0", "0")
		case 2: // the calendar form: periods around now, the next ending past the 60 s bound
			t, _ := strconv.ParseInt(ms, 10, 64)
			argv[1] = "0"
			argv = append(argv, "all", "0", strconv.FormatInt(t-5000, 10), strconv.FormatInt(t+1+r.Int63n(3000), 10), strconv.FormatInt(t+61000+r.Int63n(5000), 10))
		}
		return mkCall{[]string{g.key()}, argv}
	case "sliding_window_counter", "sliding_window_log":
		lim := [][]string{{"5", "1000"}, {"3", "300"}, {"10", "2000"}}[r.Intn(3)]
		most, _ := strconv.Atoi(lim[0])
		argv := append(append([]string(nil), lim...), g.cost(most), g.clock(now), g.deadline(now))
		if r.Intn(3) == 0 {
			argv = append(argv, g.pick("refund", "charge"), at())
		}
		return mkCall{[]string{g.key()}, argv}
	case "multi":
		n := 1 + r.Intn(3)
		var keys []string
		for len(keys) < n {
			k := g.key()
			if r.Intn(20) != 0 { // now and then a key twice: BADARG
				for _, have := range keys {
					if have == k {
						k = ""
					}
				}
			}
			if k != "" {
				keys = append(keys, k)
			}
		}
		argv := []string{g.cost(5), g.clock(now), g.deadline(now)}
		for range keys {
			lim := [][]string{{"5", "10", "1000"}, {"3", "1", "1000"}, {"10", "7", "300"}}[r.Intn(3)]
			argv = append(argv, lim...)
		}
		return mkCall{keys, argv}
	case "concurrency":
		op := g.pick("acquire", "acquire", "renew", "release")
		argv := []string{op, g.pick("l1", "l2", "l3", "l4"), g.pick("1", "2", "3"), g.pick("500", "2000", "100000"), g.clock(now), g.deadline(now)}
		return mkCall{[]string{g.key()}, argv}
	}
	panic("no generator for " + g.script)
}

// batchSize is 1 to 64, mostly small, often the largest.
func batchSize(r *rand.Rand, most int) int {
	switch r.Intn(5) {
	case 0:
		return most
	case 1:
		return 1 + r.Intn(most)
	}
	return 1 + r.Intn(8)
}

// TestMultiKeyFormIsItsCalls holds every script's multi-key form to its
// promise. Random calls (keys drawn from three, so one key often comes
// several times in a batch; random costs, settles, gcra's and
// token_bucket's own batches, multi's limits, concurrency's leases; bad
// arguments, a key of the wrong type and another script's state among
// them) run (A) one call each and (B) in batches of 1 to 64 through the
// form, on two servers at the same frozen clock (which moves between
// batches): every element of (B) must be (A)'s reply or error to the same
// call, and after every batch both servers must hold the same keys,
// values and TTLs.
func TestMultiKeyFormIsItsCalls(t *testing.T) {
	forms, most := multiKeyForms(t)
	if most != 64 {
		t.Fatalf("max_calls = %d, want 64", most)
	}
	for _, script := range scenario.Scripts() {
		t.Run(script, func(t *testing.T) {
			src, err := Source(script)
			if err != nil {
				t.Fatal(err)
			}
			form := forms[script]
			var calls, batches, full, repeated, errorsIn int
			codes := map[string]int{}
			for seed := int64(1); seed <= 24; seed++ {
				rng := rand.New(rand.NewSource(seed))
				g := &mkGen{rng: rng, script: script}
				a, b := New(scenario.T0), New(scenario.T0)
				for _, r := range []*Redis{a, b} {
					r.data[mkWrong] = fuzzValue("hash\tname\talice")
					r.data[mkForeign] = fuzzValue(mkForeignState(script))
				}
				for i := 0; i < 10; i++ {
					now := a.Now() + rng.Int63n(400_000)
					a.SetTime(now)
					b.SetTime(now)
					batch := make([]mkCall, batchSize(rng, most))
					for j := range batch {
						batch[j] = g.call(now)
					}
					want := make([]any, len(batch))
					for j, c := range batch {
						want[j] = asElement(a.Eval(src, c.keys, c.argv))
					}
					keys, argv := multiKeyLayout(batch)
					got, err := b.Eval(form, keys, argv)
					if err != nil {
						t.Fatalf("seed %d batch %d: the form answered %v\ncalls: %v", seed, i, err, batch)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("seed %d batch %d: (-one call each +the form):\n%s\ncalls: %v", seed, i, diff, batch)
					}
					if sa, sb := a.Snapshot(), b.Snapshot(); !sa.Equal(sb) {
						t.Fatalf("seed %d batch %d: keys (-one call each +the form):\n%s\ncalls: %v", seed, i, cmp.Diff(sa.String(), sb.String()), batch)
					}
					seen := map[string]int{}
					for j, c := range batch {
						for _, k := range c.keys {
							seen[k]++
						}
						if e, ok := want[j].(ErrorReply); ok {
							codes[strings.Fields(string(e))[0]]++
							if j > 0 && j < len(batch)-1 {
								errorsIn++
							}
						}
					}
					for _, n := range seen {
						if n > 1 {
							repeated++
							break
						}
					}
					if len(batch) == most {
						full++
					}
					calls += len(batch)
					batches++
				}
			}
			t.Logf("%d calls in %d batches (%d of 64, %d naming a key twice or more); %d errors mid-batch; codes %v", calls, batches, full, repeated, errorsIn, codes)
			// The search must reach what it claims to: full batches,
			// keys repeated, and every kind of error inside a batch.
			if full < 20 || repeated < 100 || errorsIn < 50 || codes["BADARG"] < 20 || codes["WRONGTYPE"] < 10 || codes["BADSTATE"] < 10 {
				t.Errorf("the search proves little: %d full batches, %d with a key repeated, %d errors mid-batch, codes %v", full, repeated, errorsIn, codes)
			}
		})
	}
}

// TestMultiKeyFormRunsCallsInOrder: calls on one key see each other's
// writes, in order: a burst of 3 on one key, asked 5 times in one call of
// the form, answers 1, 1, 1, 0, 0.
func TestMultiKeyFormRunsCallsInOrder(t *testing.T) {
	forms, _ := multiKeyForms(t)
	r := New(scenario.T0)
	var batch []mkCall
	for i := 0; i < 5; i++ {
		batch = append(batch, mkCall{[]string{"k"}, []string{"3", "1", "1000", "0", "all", "1", "0"}})
	}
	keys, argv := multiKeyLayout(batch)
	got, err := r.Eval(forms["gcra"], keys, argv)
	if err != nil {
		t.Fatal(err)
	}
	var allowed []int64
	for _, el := range got.([]any) {
		allowed = append(allowed, el.([]any)[0].(int64))
	}
	if diff := cmp.Diff([]int64{1, 1, 1, 0, 0}, allowed); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
}

// TestMultiKeyLayoutIsChecked sweeps the form's own layout: each wrong
// layout answers BADARG before any call runs, so no command is sent and
// no key changes, even when the calls before the fault are good. Control:
// the same good call 64 times in one call of the form runs.
func TestMultiKeyLayoutIsChecked(t *testing.T) {
	forms, most := multiKeyForms(t)
	for _, script := range scenario.Scripts() {
		t.Run(script, func(t *testing.T) {
			src, err := Source(script)
			if err != nil {
				t.Fatal(err)
			}
			form := forms[script]
			// A key that holds state, and a call the script takes.
			r, keys, good := firstWrite(t, script, src, 0)
			one := mkCall{keys, good}
			k1, a1 := multiKeyLayout([]mkCall{one})
			nk, na := a1[0], a1[1]
			var cases []struct {
				name       string
				keys, argv []string
			}
			add := func(name string, keys, argv []string) {
				cases = append(cases, struct {
					name       string
					keys, argv []string
				}{name, keys, argv})
			}
			add("no calls", nil, nil)
			add("no calls, a key", k1, nil)
			add("only a key count", k1, []string{nk})
			k65, a65 := multiKeyLayout(repeatCall(one, most+1))
			add("65 calls", k65, a65)
			for _, v := range []string{"", " ", "-1", "+1", "1.0", "1e0", "0x1", " 1", "1 ", "1\x00", "abc", "nan", "inf", "12345", "99999999999999999999", "١"} {
				for which := 0; which < 2; which++ {
					argv := append([]string(nil), a1...)
					argv[which] = v
					add(fmt.Sprintf("count %d %q", which, v), k1, argv)
					// The same fault in the second call: the first, good,
					// must not run either.
					k2, a2 := multiKeyLayout([]mkCall{one, one})
					a2[len(a1)+which] = v
					add(fmt.Sprintf("second call's count %d %q", which, v), k2, a2)
				}
			}
			more := func(s string, by int) string { n, _ := strconv.Atoi(s); return strconv.Itoa(n + by) }
			add("one key more named than sent", k1, append([]string{more(nk, 1)}, a1[1:]...))
			add("9999 keys named", k1, append([]string{"9999"}, a1[1:]...))
			add("one argument more named than sent", k1, append([]string{nk, more(na, 1)}, a1[2:]...))
			add("9999 arguments named", k1, append([]string{nk, "9999"}, a1[2:]...))
			add("one key fewer named than sent", append(append([]string(nil), k1...), "extra:{mk}"), a1)
			add("no key named, keys sent", k1, append([]string{"0"}, a1[1:]...))
			add("one argument fewer named: a stray argument", k1, append([]string{nk, more(na, -1)}, a1[2:]...))
			add("a trailing count", k1, append(append([]string(nil), a1...), "0"))
			k2, a2 := multiKeyLayout([]mkCall{one, one})
			add("second call names more keys than sent", k2, append(append(append([]string(nil), a1...), more(nk, 1)), a1[1:]...))
			add("second call's keys missing", k2[:len(k1)], a2)
			for _, c := range cases {
				before := r.Snapshot()
				got, err := r.Eval(form, c.keys, c.argv)
				if err == nil || !strings.HasPrefix(err.Error(), "BADARG multi-key call: ") {
					t.Errorf("%s (KEYS %q, ARGV %q): got (%v, %v), want a BADARG multi-key call", c.name, c.keys, c.argv, got, err)
				}
				if len(r.Commands()) != 0 {
					t.Errorf("%s: sent %v before failing", c.name, r.Commands())
				}
				if after := r.Snapshot(); !before.Equal(after) {
					t.Errorf("%s changed state:\n%s->\n%s", c.name, before, after)
				}
			}
			// Control: 64 good calls run, each answered.
			k64, a64 := multiKeyLayout(repeatCall(one, most))
			got, err := r.Eval(form, k64, a64)
			if err != nil || len(got.([]any)) != most {
				t.Errorf("64 calls: got (%v, %v), want 64 replies", got, err)
			}
			t.Logf("%d bad layouts", len(cases))
		})
	}
}

func repeatCall(c mkCall, n int) []mkCall {
	out := make([]mkCall, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestMultiKeyFormKeepsTheText: the form holds the script's text
// unchanged, prologue and all, once, so the checks on the text (the
// prologue's bytes, the header) hold for what the form runs.
func TestMultiKeyFormKeepsTheText(t *testing.T) {
	forms, _ := multiKeyForms(t)
	for _, name := range scenario.Scripts() {
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := prologue(src)
		if !ok || strings.Count(forms[name], src) != 1 || strings.Count(forms[name], p) != 1 {
			t.Errorf("%s: the form does not hold the script's text and its prologue exactly once", name)
		}
	}
}

// TestMultiKeyCountsArePlainDecimal: a count with a leading zero is not a
// plain decimal (the scripts refuse "01" and "007" in every integer
// argument: badarg_test.go's bad), so the form must refuse it too, before
// any call runs.
func TestMultiKeyCountsArePlainDecimal(t *testing.T) {
	forms, _ := multiKeyForms(t)
	good := []string{"3", "1", "1000", "0", "all", "1", "0"}
	for _, c := range [][2]string{{"01", "7"}, {"1", "07"}, {"0001", "7"}, {"1", "0007"}, {"00", "7"}} {
		r := New(scenario.T0)
		got, err := r.Eval(forms["gcra"], []string{"k"}, append([]string{c[0], c[1]}, good...))
		if err == nil || !strings.HasPrefix(err.Error(), "BADARG multi-key call: ") || len(r.Commands()) != 0 {
			t.Errorf("counts %q: got (%v, %v) after %v, want a BADARG multi-key call and nothing sent", c, got, err, r.Commands())
		}
	}
}
