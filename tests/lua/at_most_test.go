package luatest

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// gcra.lua's take at_most (once gcra_at_most.lua) is take all taking what
// is left. Its claim is checked against take all on the same key: before
// each call a peek (on a copy) says what is left; at_most must take the
// least of n and that, leave exactly the key take all with that cost
// leaves (TTL included), and answer what it answers; when nothing is left
// it must answer take all's denial of one request and change nothing.
// Calls of both interleave on the key, with the server's clock and
// callers' clocks, and limits that change.

func TestTakeAtMostIsTakeAll(t *testing.T) {
	w := newAtMostWorld(t)
	for seed := int64(1); seed <= 60; seed++ {
		w.run(rand.New(rand.NewSource(seed)), "", 80)
	}
	if w.taken < 500 || w.none < 50 {
		t.Fatalf("only %d calls took something and %d took nothing: the search proves little", w.taken, w.none)
	}
}

func FuzzTakeAtMost(f *testing.F) {
	f.Add("", int64(1))
	f.Add("string\t"+scenario.GCRAState(scenario.T0+1000000, 1000000, 1000000), int64(2))
	f.Add("string\t"+scenario.GCRAState(scenario.T0+60000001+1000000, 1000000, 1000000), int64(3))
	f.Add("string\t"+scenario.LeakyBucketState(scenario.T0, 200000, 200000), int64(4))
	f.Add("string\tg1767225600200000200000/01", int64(5))
	w := newAtMostWorld(f)
	f.Fuzz(func(t *testing.T, state string, seed int64) {
		w := *w
		w.t = t
		w.run(rand.New(rand.NewSource(seed)), state, 40)
	})
}

// isScriptError reports whether err is one of the codes the headers
// declare.
func isScriptError(err error) bool {
	code, _, _ := strings.Cut(err.Error(), " ")
	return code == "BADARG" || code == "BADSTATE" || code == "WRONGTYPE" || code == "EXPIRED"
}

type atMostWorld struct {
	t           testing.TB
	gcra        string
	taken, none int
}

func newAtMostWorld(t testing.TB) *atMostWorld {
	g, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	return &atMostWorld{t: t, gcra: g}
}

func (w *atMostWorld) run(rng *rand.Rand, state string, n int) {
	t := w.t
	r := New(scenario.T0)
	if v := fuzzValue(state); v != nil {
		r.data["k"] = v
	}
	s := func(v int64) string { return strconv.FormatInt(v, 10) }
	limits := [][3]int64{{5, 10, 1000}, {3, 1, 1000}, {10, 7, 300}, {1, 1, 1}, {1000000000, 999999937, 100000000000}}
	lim := limits[rng.Intn(len(limits))]
	keys := []string{"k"}
	for i := 0; i < n; i++ {
		// Up to three intervals on: room comes back a few requests at a time.
		r.SetTime(min(maxTime-maxSkew, r.Now()+rng.Int63n(3*lim[2]*1000/lim[1]+2)))
		if rng.Intn(15) == 0 {
			lim = limits[rng.Intn(len(limits))]
		}
		now := "0"
		if rng.Intn(3) == 0 {
			now = s(r.Now() + rng.Int63n(2*maxSkew+1) - maxSkew)
		}
		deadline := "0"
		if rng.Intn(12) == 0 {
			deadline = s(r.Now() + rng.Int63n(3) - 1)
		}
		call := func(take string, c int64) []string {
			return oneCall("gcra", []string{s(lim[0]), s(lim[1]), s(lim[2]), take}, s(c), now, deadline)
		}
		args := func(c int64) []string { return call("all", c) }
		if rng.Intn(3) == 0 {
			// take all on the same key, any cost (a foreign state is its
			// error, and at_most's below).
			if _, err := r.Eval(w.gcra, keys, args(rng.Int63n(lim[0]+2))); err != nil && !isScriptError(err) {
				t.Fatalf("gcra %v: %v", args(0), err)
			}
			continue
		}
		want := min(1e9, rng.Int63n(lim[0]*2)+1)
		peek, perr := r.Clone().Eval(w.gcra, keys, args(0))
		g := r.Clone() // for take all with the cost at_most takes
		before := r.Snapshot()
		got, err := r.Eval(w.gcra, keys, call("at_most", want))
		if perr != nil || err != nil {
			// The same error reply, and nothing changed.
			if !sameReply(perr, err) || !before.Equal(r.Snapshot()) {
				t.Fatalf("%v: take all's peek says %v, at_most (%v, %v)", call("at_most", want), perr, got, err)
			}
			continue
		}
		if peek.([]any)[0] == int64(-1) {
			// Past its deadline: at_most answers the same, and takes nothing.
			if diff := cmp.Diff(peek, got); diff != "" || !before.Equal(r.Snapshot()) {
				t.Fatalf("%v past its deadline: (-take all +at_most):\n%s", call("at_most", want), diff)
			}
			w.none++
			continue
		}
		left := peek.([]any)[1].(int64)
		take := min(want, left)
		if take == 0 {
			// Nothing left: gcra.lua's denial of one request, and no write.
			denial, _ := r.Clone().Eval(w.gcra, keys, args(1))
			d := denial.([]any)
			if diff := cmp.Diff([]any{int64(0), int64(0), d[2], d[3]}, got); diff != "" || !before.Equal(r.Snapshot()) {
				t.Fatalf("%v with nothing left: (-take all +at_most):\n%s", call("at_most", want), diff)
			}
			w.none++
			continue
		}
		// What gcra.lua with cost take leaves and answers.
		ref, err := g.Eval(w.gcra, keys, args(take))
		if err != nil || ref.([]any)[0] != int64(1) {
			t.Fatalf("%v: take all with cost %d (what was left): (%v, %v)", call("at_most", want), take, ref, err)
		}
		rr := ref.([]any)
		if diff := cmp.Diff([]any{take, rr[1], rr[2], rr[3]}, got); diff != "" {
			t.Fatalf("%v: (-take all with cost %d +at_most):\n%s", call("at_most", want), take, diff)
		}
		if a, b := r.Snapshot(), g.Snapshot(); !a.Equal(b) {
			t.Fatalf("%v: state (-take all +at_most):\n%s", call("at_most", want), cmp.Diff(b.String(), a.String()))
		}
		w.taken++
	}
}
