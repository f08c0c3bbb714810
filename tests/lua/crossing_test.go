package luatest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestNoScriptReadsAnothersState (issue 15.1): for every ordered pair of
// scripts, the first writes its state on a key and every call of the
// second on it is refused, sends no write and leaves the key as it was,
// value and TTL; scripts that share GCRA's state read each other's. Before
// the states named their script, leaky_bucket and gcra read each other's
// keys as their own, token_bucket and fixed_window too, and concurrency.lua
// reaped a sliding window log's members as expired leases.
func TestNoScriptReadsAnothersState(t *testing.T) {
	all := scenario.Crossings()
	var names []string
	for _, c := range all {
		names = append(names, c.Script)
	}
	if diff := cmp.Diff(scenario.Scripts(), names); diff != "" {
		t.Fatalf("scripts (-) vs scripts in the matrix (+):\n%s", diff)
	}
	refused := 0
	for _, writer := range all {
		for _, reader := range all {
			if writer.Script == reader.Script {
				continue
			}
			t.Run(writer.Script+"/"+reader.Script, func(t *testing.T) {
				wsrc, err := Source(writer.Script)
				if err != nil {
					t.Fatal(err)
				}
				rsrc, err := Source(reader.Script)
				if err != nil {
					t.Fatal(err)
				}
				// Off a whole second, as a real clock is: the digits of one
				// state then read as another's numbers, not as zeros.
				r := New(scenario.T0 + 123457)
				if got, err := r.Eval(wsrc, []string{"k"}, writer.Calls[0]); err != nil || got.([]any)[0] == int64(0) {
					t.Fatalf("%s %v on an empty key: (%v, %v), want an admit", writer.Script, writer.Calls[0], got, err)
				}
				r.SetTime(scenario.T0 + 124457)
				code := scenario.CrossCode(writer, reader)
				for _, argv := range reader.Calls {
					before := r.Snapshot()
					got, err := r.Eval(rsrc, []string{"k"}, argv)
					if code == "" {
						if err != nil {
							t.Errorf("%s %v on %s's state: %v, want it read as its own", reader.Script, argv, writer.Script, err)
						}
						continue
					}
					if err == nil || !strings.HasPrefix(err.Error(), code+" ") {
						t.Errorf("%s %v on %s's state: (%v, %v), want %s", reader.Script, argv, writer.Script, got, err, code)
					}
					if after := r.Snapshot(); !before.Equal(after) {
						t.Errorf("%s %v changed %s's state:\n%s->\n%s", reader.Script, argv, writer.Script, before, after)
					}
					for _, c := range r.Commands() {
						if writes[strings.ToUpper(strings.Fields(c)[0])] {
							t.Errorf("%s %v on %s's state sent %q", reader.Script, argv, writer.Script, c)
						}
					}
					refused++
				}
			})
		}
	}
	if refused < 150 {
		t.Errorf("only %d refusals checked", refused)
	}
}

// TestEarlierLayoutsAreRefused: every layout an earlier version of any
// script wrote (scenario.Earliers) meets every call of every script of
// this version, which refuses it, sends no write and leaves the key as it
// was, value and TTL. Before, concurrency.lua took an earlier log's
// members ('<us>-<n>') for expired leases: it admitted, and deleted them.
func TestEarlierLayoutsAreRefused(t *testing.T) {
	refused := 0
	for _, e := range scenario.Earliers() {
		for _, reader := range scenario.Crossings() {
			t.Run(e.Name+"/"+reader.Script, func(t *testing.T) {
				src, err := Source(reader.Script)
				if err != nil {
					t.Fatal(err)
				}
				r := New(scenario.T0 + 123457)
				for _, cmd := range e.Commands("k", r.Now()) {
					if _, err := r.Eval("return redis.call(unpack(ARGV))", nil, cmd); err != nil {
						t.Fatalf("%v: %v", cmd, err)
					}
				}
				r.SetTime(r.Now() + 1000)
				code := scenario.EarlierCode(e, reader)
				for _, argv := range reader.Calls {
					before := r.Snapshot()
					got, err := r.Eval(src, []string{"k"}, argv)
					if err == nil || !strings.HasPrefix(err.Error(), code+" ") {
						t.Errorf("%s %v: (%v, %v), want %s", reader.Script, argv, got, err, code)
					}
					if after := r.Snapshot(); !before.Equal(after) {
						t.Errorf("%s %v changed it:\n%s->\n%s", reader.Script, argv, before, after)
					}
					for _, c := range r.Commands() {
						if writes[strings.ToUpper(strings.Fields(c)[0])] {
							t.Errorf("%s %v sent %q", reader.Script, argv, c)
						}
					}
					refused++
				}
			})
		}
	}
	calls := 0
	for _, c := range scenario.Crossings() {
		calls += len(c.Calls)
	}
	if want := len(scenario.Earliers()) * calls; refused != want {
		t.Errorf("only %d refusals checked, want %d", refused, want)
	}
}
