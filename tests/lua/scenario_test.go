package luatest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// writes are the commands that change state; a denied call, a peek and a
// call with bad input must send none of them.
var writes = map[string]bool{"SET": true, "HSET": true, "DEL": true, "PEXPIRE": true, "ZADD": true, "ZREMRANGEBYSCORE": true, "ZREM": true}

func TestScenarios(t *testing.T) {
	for _, sc := range scenario.All() {
		t.Run(sc.Script+"/"+sc.Name, func(t *testing.T) {
			src, err := Source(sc.Script)
			if err != nil {
				t.Fatal(err)
			}
			runScenario(t, src, sc, scenario.T0)
		})
	}
}

// runScenario runs sc's steps from base (scenario.T0, or the early clock of
// TestScenariosEarlyClock): the server starts there, Preset is given it,
// and each step's server clock and caller clock count from it. Every reply
// must match; a denial, peek or error must send no write and change
// nothing; and each key's PTTL must be the step's TTL where it gives one.
func runScenario(t *testing.T, src string, sc scenario.Scenario, base int64) {
	t.Helper()
	r := New(base)
	for k, v := range sc.Strings {
		r.Set(k, v)
	}
	if sc.Preset != nil {
		for _, p := range sc.Preset(base) {
			r.Put(p)
		}
	}
	clock := r.Now()
	for i, st := range sc.Steps {
		clock = max(clock, st.ServerAtFrom(base))
		r.SetTime(clock)
		before := r.Snapshot()
		argv := sc.ArgvFrom(base, st)
		got, err := r.Eval(src, sc.Keys, argv)

		readOnly := err != nil
		switch {
		case st.Err != "":
			if err == nil || !strings.HasPrefix(err.Error(), st.Err) {
				t.Fatalf("step %d %v: got (%v, %v), want error %q", i, argv, got, err, st.Err)
			}
		case err != nil:
			t.Fatalf("step %d %v: %v", i, argv, err)
		default:
			want := make([]any, len(st.Want))
			for j, w := range st.Want {
				want[j] = w
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d at %v %v: reply (-want +got):\n%s", i, st.At, argv, diff)
			}
			readOnly = !scenario.SpecOf(sc.Script).Wrote(argv, st.Want)
		}
		if readOnly {
			if after := r.Snapshot(); !before.Equal(after) {
				t.Fatalf("step %d %v: a denied call, peek or error changed state:\nbefore:\n%safter:\n%s", i, argv, before, after)
			}
			for _, c := range r.Commands() {
				if name := strings.Fields(c)[0]; writes[strings.ToUpper(name)] {
					t.Fatalf("step %d %v: a denied call, peek or error sent %q", i, argv, c)
				}
			}
		}
		if st.TTL != nil {
			got := make([]int64, len(sc.Keys))
			for j, k := range sc.Keys {
				got[j] = r.PTTL(k)
			}
			if diff := cmp.Diff(st.TTL, got); diff != "" {
				t.Fatalf("step %d at %v %v: PTTL (-want +got):\n%s", i, st.At, argv, diff)
			}
		}
	}
}

// TestEveryScriptHasScenarios keeps a new script from landing untested.
func TestEveryScriptHasScenarios(t *testing.T) {
	files, err := scriptNames()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, scenario.Scripts()); diff != "" {
		t.Errorf("scripts in lua/ (-) vs scripts with scenarios (+):\n%s", diff)
	}
}
