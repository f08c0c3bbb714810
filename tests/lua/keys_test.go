package luatest

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestKeysAreTheirCalls holds gcra.lua's and token_bucket.lua's call of
// many keys to its promise: request i of a call of n distinct keys is answered exactly as
// its own call on key i, at the same instant, in turn, and the keys are
// left as those calls leave them (TTLs included), after one read and at
// most one write per key. Where a call of its own would fail (a key of
// another type, another script's state), the call of many keys fails with
// the first such error and writes nothing at any key. The keys start
// empty or hold every form of the state, another script's state or a hash;
// limits, takes, clocks, costs and deadlines (some passed) are random.
func TestKeysAreTheirCalls(t *testing.T) {
	for _, script := range []string{"gcra", "token_bucket"} {
		t.Run(script, func(t *testing.T) { keysAreTheirCalls(t, script) })
	}
}

func keysAreTheirCalls(t *testing.T, script string) {
	src, err := Source(script)
	if err != nil {
		t.Fatal(err)
	}
	states, lims := batchStates[script], batchLimits[script]
	foreign := states[len(states)-2] // another script's state
	calls, requests, errors := 0, 0, 0
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		r := New(scenario.T0)
		pool := make([]string, 80)
		for i := range pool {
			pool[i] = fmt.Sprintf("k%d", i)
			// Foreign data and another script's state only now and then,
			// so most calls are answered.
			if v := states[rng.Intn(len(states))]; v != "" && (rng.Intn(12) == 0 || v != foreign && v != states[len(states)-1]) {
				r.data[pool[i]] = fuzzValue(v)
			}
		}
		for i := 0; i < 25; i++ {
			r.SetTime(r.Now() + rng.Int63n(300_000))
			c := callArgs{lim: append([]string(nil), lims[rng.Intn(len(lims))]...), now: "0"}
			if rng.Intn(3) == 0 {
				c.now = strconv.FormatInt(r.Now()+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
			}
			if script == "gcra" {
				c.lim[3] = [...]string{"all", "at_most", "refund", "charge"}[rng.Intn(4)]
			} else if rng.Intn(2) == 0 {
				c.lim[3] += [...]string{"_refund", "_charge"}[rng.Intn(2)]
			}
			n := 2 + rng.Intn(11)
			if rng.Intn(8) == 0 {
				n = 64
			}
			keys := make([]string, n)
			for j, p := range rng.Perm(len(pool))[:n] {
				keys[j] = pool[p]
			}
			most, _ := strconv.ParseInt(c.lim[0], 10, 64)
			for j := 0; j < n; j++ {
				cost := rng.Int63n(most + 3)
				if rng.Intn(3) == 0 {
					cost = rng.Int63n(3)
				}
				deadline := "0"
				if rng.Intn(6) == 0 {
					deadline = strconv.FormatInt(r.Now()+rng.Int63n(5)-2, 10)
				}
				c.reqs = append(c.reqs, request{strconv.FormatInt(cost, 10), deadline})
			}
			// Each request as its own call, on a copy.
			seq := r.Clone()
			var want []int64
			var wantErr error
			for j, q := range c.reqs {
				got, err := seq.Eval(src, keys[j:j+1], oneCall(script, c.lim, q.cost, c.now, q.deadline))
				if err != nil {
					wantErr = err
					break
				}
				want = append(want, ints64(got)...)
			}
			before := r.Snapshot()
			argv := c.argv(script)
			got, err := r.Eval(src, keys, argv)
			if !sameReply(err, wantErr) {
				t.Fatalf("seed %d call %d %v %v: many keys say (%v, %v), one by one %v", seed, i, keys, argv, got, err, wantErr)
			}
			if err != nil {
				if !before.Equal(r.Snapshot()) {
					t.Fatalf("seed %d call %d %v: an error changed a key", seed, i, argv)
				}
				for _, cmd := range r.Commands() {
					if writes[strings.ToUpper(strings.Fields(cmd)[0])] {
						t.Fatalf("seed %d call %d: an error sent %q", seed, i, cmd)
					}
				}
				errors++
				// Start the refused keys afresh.
				for _, k := range keys {
					if v := r.data[k]; v != nil && (v.kind != "string" || strings.HasPrefix(foreign, "string\t"+v.str)) {
						delete(r.data, k)
					}
				}
				continue
			}
			if diff := cmp.Diff(want, ints64(got)); diff != "" {
				t.Fatalf("seed %d call %d %v %v: (-one by one +many keys):\n%s", seed, i, keys, argv, diff)
			}
			if a, b := r.Snapshot(), seq.Snapshot(); !a.Equal(b) {
				t.Fatalf("seed %d call %d %v: keys (-one by one +many keys):\n%s", seed, i, argv, cmp.Diff(b.String(), a.String()))
			}
			count := map[string]int{}
			for _, cmd := range r.Commands() {
				f := append(strings.Fields(cmd), "")
				count[strings.ToUpper(f[0])+" "+f[1]]++
			}
			for k, m := range count {
				if m > 1 {
					t.Fatalf("seed %d call %d: %s %d times: %v", seed, i, k, m, r.Commands())
				}
			}
			calls++
			requests += n
		}
	}
	t.Logf("%d calls of %d requests, %d errors", calls, requests, errors)
	if calls < 700 || errors < 20 {
		t.Fatalf("%d calls of %d requests, %d errors: the search proves little", calls, requests, errors)
	}
}

// TestManyKeysRejectBadInput is the bad-input sweep over a call of many
// keys: every argument of a good call of three keys (the limit, the clock,
// the word, each key's cost and deadline) swapped for each value the
// header's type refuses answers BADARG and writes nothing, at any key.
func TestManyKeysRejectBadInput(t *testing.T) {
	for _, name := range []string{"gcra", "token_bucket"} {
		t.Run(name, func(t *testing.T) {
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			header := parseHeader(t, name, src)
			if k := header.Keys[0]; !k.Variadic || k.MaxCount.Int < 3 {
				t.Fatalf("%s's key is not variadic to 3 or more: %+v", name, k)
			}
			r, _, good := firstWrite(t, name, src, 0)
			fixed := len(header.Args) - 1
			requests := header.Args[fixed]
			if len(good) != fixed+len(requests.Fields) {
				t.Fatalf("%s's first write is not one request: %q", name, good)
			}
			keys := []string{"many:{k}1", "many:{k}2", "many:{k}3"}
			argv := append([]string(nil), good...)
			for range keys[1:] {
				argv = append(argv, good[fixed:]...)
			}
			if _, err := r.Clone().Eval(src, keys, argv); err != nil {
				t.Fatalf("the good call of three keys: %v", err)
			}
			swept := 0
			for j := range argv {
				var values []string
				switch {
				case j >= fixed:
					values = badNumbers(requests.Fields[(j-fixed)%len(requests.Fields)])
				case len(header.Args[j].Enum) > 0:
					values = []string{"", "0", "nil", strings.ToUpper(header.Args[j].Enum[0])}
				default:
					values = badNumbers(header.Args[j])
				}
				for _, v := range values {
					bad := append([]string(nil), argv...)
					bad[j] = v
					expectBadArg(t, r, src, keys, bad, "BADARG ")
					swept++
				}
			}
			if swept < 100 {
				t.Fatalf("%d bad calls: the sweep proves little", swept)
			}
		})
	}
}
