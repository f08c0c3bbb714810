package tiers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
	"github.com/redlimit/redlimit/tests/scenario"
)

// A tier runs one scenario's calls against one kind of server.
type tier struct {
	name string
	// exact tiers control the server clock, so scenarios run as written and
	// every PTTL is checked. The real servers keep their own clock: there
	// every step sends its instant as the caller clock, and a PTTL is checked
	// only right after a write, within ttlSlack.
	exact bool
	open  func(t *testing.T) (c redis.Scripter, setTime func(us int64))
}

const ttlSlack = 250 // ms a real server's clock may move during a step

func tiers() []tier {
	return []tier{
		{name: "miniredis", exact: true, open: func(t *testing.T) (redis.Scripter, func(int64)) {
			m := miniredis.RunT(t)
			m.SetTime(time.UnixMicro(scenario.T0))
			m.ClockTTL(true)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			return c, func(us int64) { m.SetTime(time.UnixMicro(us)) }
		}},
		{name: "redis-resp2", open: func(t *testing.T) (redis.Scripter, func(int64)) {
			return standalone(t, 2), nil
		}},
		{name: "redis-resp3", open: func(t *testing.T) (redis.Scripter, func(int64)) {
			return standalone(t, 3), nil
		}},
		{name: "cluster", open: func(t *testing.T) (redis.Scripter, func(int64)) {
			return cluster(t), nil
		}},
	}
}

// TestScenarioTiers runs every scenario table on every tier and, step by
// step, against the gopher-lua tier given the very same arguments: all tiers
// must return identical replies.
func TestScenarioTiers(t *testing.T) {
	run := fmt.Sprintf("run%d:", time.Now().UnixNano())
	for _, tr := range tiers() {
		t.Run(tr.name, func(t *testing.T) {
			c, setTime := tr.open(t)
			for _, sc := range scenario.All() {
				t.Run(sc.Script+"/"+sc.Name, func(t *testing.T) {
					if !tr.exact {
						sc = withCallerClock(sc)
					}
					runTier(t, tr, c, setTime, run+tr.name+":", sc)
				})
			}
		})
	}
}

// withCallerClock turns server-clock steps into caller-clock steps.
func withCallerClock(sc scenario.Scenario) scenario.Scenario {
	sc.CallerClock = true
	return sc
}

func runTier(t *testing.T, tr tier, c redis.Scripter, setTime func(int64), run string, sc scenario.Scenario) {
	ctx := context.Background()
	src, err := luatest.Source(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(src)
	keys := make([]string, len(sc.Keys))
	for i, k := range sc.Keys {
		keys[i] = run + k // the prefix sits outside the {hash tag}
	}
	ref := luatest.New(scenario.T0)
	for k, v := range sc.Strings {
		ref.Set(k, v)
		if err := c.(redis.Cmdable).Set(ctx, run+k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	clock := int64(scenario.T0)
	for i, st := range sc.Steps {
		clock = max(clock, scenario.T0+st.At.Microseconds())
		ref.SetTime(clock)
		if setTime != nil {
			setTime(clock)
		}
		argv := sc.Argv(st)
		wantReply, wantErr := ref.Eval(src, sc.Keys, argv)
		args := make([]any, len(argv))
		for j, a := range argv {
			args[j] = a
		}
		got, err := script.Run(ctx, c, keys, args...).Result()

		if wantErr != nil || err != nil {
			if !sameError(wantErr, err) {
				t.Fatalf("step %d %v: gopher-lua says %v, %s says (%v, %v)", i, argv, wantErr, tr.name, got, err)
			}
			continue
		}
		if diff := cmp.Diff(wantReply, normalize(got)); diff != "" {
			t.Fatalf("step %d %v: gopher-lua (-) vs %s (+):\n%s", i, argv, tr.name, diff)
		}
		if st.Want != nil {
			if diff := cmp.Diff(st.Want, ints(got)); diff != "" {
				t.Fatalf("step %d %v: table (-) vs %s (+):\n%s", i, argv, tr.name, diff)
			}
		}
		wrote := st.Args[scenario.SpecOf(sc.Script).CostArg] != "0" && ints(got)[0] == 1
		// The table's PTTLs hold for its own clock; here the gopher-lua tier,
		// given the same arguments, says what they must be.
		if st.TTL == nil || !(tr.exact || wrote) {
			continue
		}
		for j, k := range keys {
			pttl, err := c.(redis.Cmdable).PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			got := pttl.Milliseconds()
			if pttl < 0 {
				got = int64(pttl / time.Nanosecond) // -1 and -2 come back unscaled
			}
			want := ref.PTTL(sc.Keys[j])
			if got != want && (tr.exact || want < 0 || got > want || got < want-ttlSlack) {
				t.Fatalf("step %d %v: PTTL %s = %d ms, want %d", i, argv, sc.Keys[j], got, want)
			}
		}
	}
}

// sameError compares error replies: the same text, except that servers word
// their own errors (WRONGTYPE) differently around the code.
func sameError(want, got error) bool {
	if want == nil || got == nil {
		return want == got
	}
	w, g := want.Error(), got.Error()
	if strings.HasPrefix(w, "BADARG") {
		return w == g
	}
	code := strings.Fields(w)[0]
	return strings.Contains(g, code)
}

func normalize(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, el := range v {
			out[i] = normalize(el)
		}
		return out
	}
	return v
}

func ints(v any) []int64 {
	arr, _ := v.([]any)
	out := make([]int64, len(arr))
	for i, el := range arr {
		out[i], _ = el.(int64)
	}
	return out
}
