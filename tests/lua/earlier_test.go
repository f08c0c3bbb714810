package luatest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// The batch scripts' earlier versions (testdata/earlier: gcra.lua,
// gcra_at_most.lua and token_bucket.lua as they were before batches) took
// one request a call. Other stacks may hold copies of them, and callers
// built for them: every layout of theirs sent to today's scripts, and every
// batch of today's sent to them, is refused with BADARG, never answered
// as something it is not, and changes nothing, on a key that holds state.
func TestEarlierArgumentLayoutsAreRefused(t *testing.T) {
	earlier := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "earlier", name+".lua"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gcra, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Source("token_bucket")
	if err != nil {
		t.Fatal(err)
	}
	t0 := strconv.FormatInt(scenario.T0, 10)
	due := strconv.FormatInt(scenario.T0+1e6, 10)
	f := strings.Fields
	// The earlier layouts: gcra.lua's burst rate period cost now deadline,
	// gcra_at_most.lua's burst rate period n now deadline (the same
	// shape), token_bucket.lua's capacity rate period refill cost now
	// deadline.
	var oldGCRA, oldTB [][]string
	for _, cost := range []string{"0", "1", "3"} {
		for _, now := range []string{"0", t0} {
			for _, d := range []string{"0", due} {
				oldGCRA = append(oldGCRA, []string{"5", "10", "1000", cost, now, d})
				oldTB = append(oldTB, []string{"5", "10", "1000", "smooth", cost, now, d}, []string{"5", "10", "1000", "interval", cost, now, d})
			}
		}
	}
	// Today's: one request, two, 64, take all and at_most.
	batch := func(head []string, n int) []string {
		out := append([]string(nil), head...)
		for i := 0; i < n; i++ {
			out = append(out, "1", "0")
		}
		return out
	}
	var newGCRA, newTB [][]string
	for _, n := range []int{1, 2, 64} {
		for _, now := range []string{"0", t0} {
			newGCRA = append(newGCRA, batch(f("5 10 1000 "+now+" all"), n), batch(f("5 10 1000 "+now+" at_most"), n))
			newTB = append(newTB, batch(f("5 10 1000 "+now+" smooth"), n), batch(f("5 10 1000 "+now+" interval"), n))
		}
	}
	for _, tc := range []struct {
		name      string
		src, seed string     // the script, and the one that writes the key first
		seedArgv  []string   // its first call, which admits
		calls     [][]string // what it must refuse
	}{
		{"gcra.lua meets gcra.lua's earlier layout", gcra, gcra, f("5 10 1000 0 all 1 0"), oldGCRA},
		{"gcra.lua meets gcra_at_most.lua's layout", gcra, gcra, f("5 10 1000 0 at_most 2 0"), oldGCRA},
		{"token_bucket.lua meets its earlier layout", tb, tb, f("5 10 1000 0 smooth 1 0"), oldTB},
		{"the earlier gcra.lua meets today's batches", earlier("gcra"), earlier("gcra"), f("5 10 1000 1 0 0"), newGCRA},
		{"gcra_at_most.lua meets today's batches", earlier("gcra_at_most"), earlier("gcra_at_most"), f("5 10 1000 2 0 0"), newGCRA},
		{"the earlier token_bucket.lua meets today's batches", earlier("token_bucket"), earlier("token_bucket"), f("5 10 1000 smooth 1 0 0"), newTB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(scenario.T0)
			if got, err := r.Eval(tc.seed, []string{"k"}, tc.seedArgv); err != nil || got.([]any)[0] == int64(0) {
				t.Fatalf("the first call %v: (%v, %v), want an admit", tc.seedArgv, got, err)
			}
			for _, argv := range tc.calls {
				expectBadArg(t, r, tc.src, []string{"k"}, argv, "BADARG ")
				for _, c := range r.Commands() {
					if writes[strings.ToUpper(strings.Fields(c)[0])] {
						t.Errorf("%v sent %q", argv, c)
					}
				}
			}
		})
	}
}
