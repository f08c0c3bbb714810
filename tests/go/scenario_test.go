package tiers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
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
			var n paths
			defer func() {
				if !t.Failed() && (n.typed < 100 || n.raw < 20) {
					t.Errorf("%d steps went through the typed API and %d raw: both paths must be exercised", n.typed, n.raw)
				}
			}()
			for _, sc := range scenario.All() {
				t.Run(sc.Script+"/"+sc.Name, func(t *testing.T) {
					if !tr.exact {
						sc = withCallerClock(sc)
					}
					runTier(t, tr, c, setTime, run+tr.name+":", sc, &n)
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

// stepper runs one scenario on one tier, next to the gopher-lua tier.
type stepper struct {
	t      *testing.T
	tr     tier
	c      redis.Scripter
	sc     scenario.Scenario
	script *redis.Script
	src    string
	keys   []string // the scenario's keys, prefixed for this run
	ref    *luatest.Redis
	paths  *paths
}

// paths counts the calls that went through the typed API and the raw one.
type paths struct{ typed, raw int }

func runTier(t *testing.T, tr tier, c redis.Scripter, setTime func(int64), run string, sc scenario.Scenario, n *paths) {
	src, err := luatest.Source(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	s := stepper{t: t, tr: tr, c: c, sc: sc, script: scripts[sc.Script], src: src, ref: luatest.New(scenario.T0), paths: n}
	if s.script == nil || typed[sc.Script] == nil {
		t.Fatalf("%s has no generated binding listed in typed_test.go", sc.Script)
	}
	for _, k := range sc.Keys {
		s.keys = append(s.keys, run+k) // the prefix sits outside the {hash tag}
	}
	for k, v := range sc.Strings {
		s.ref.Set(k, v)
		if err := c.(redis.Cmdable).Set(context.Background(), run+k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	clock := int64(scenario.T0)
	for i, st := range sc.Steps {
		clock = max(clock, scenario.T0+st.At.Microseconds())
		s.ref.SetTime(clock)
		if setTime != nil {
			setTime(clock)
		}
		s.step(i, st)
		if !tr.exact {
			persist(t, c, s.keys)
		}
	}
}

// send makes one call through the typed API of the generated bindings, or,
// for arguments it cannot express (and for keyless calls), through the
// bindings' script with raw ARGV.
func (s *stepper) send(argv []string) (reply any, viaTyped bool, err error) {
	ctx := context.Background()
	if len(s.keys) == 1 {
		got, err := typed[s.sc.Script](ctx, s.c, s.keys[0], &rawArgs{vals: argv, ok: true})
		if err != errNotTyped {
			s.paths.typed++
			return got, true, err
		}
	}
	s.paths.raw++
	args := make([]any, len(argv))
	for j, a := range argv {
		args[j] = a
	}
	reply, err = s.script.Run(ctx, s.c, s.keys, args...).Result()
	return reply, false, err
}

// step sends one step to both tiers and compares replies and PTTLs.
func (s *stepper) step(i int, st scenario.Step) {
	t := s.t
	t.Helper()
	argv := s.sc.Argv(st)
	wantReply, wantErr := s.ref.Eval(s.src, s.sc.Keys, argv)
	got, viaTyped, err := s.send(argv)
	if wantErr != nil || err != nil {
		if !sameError(wantErr, err) {
			t.Fatalf("step %d %v: gopher-lua says %v, %s says (%v, %v)", i, argv, wantErr, s.tr.name, got, err)
		}
		// Through the typed API, declared error codes come back as
		// sentinels. (miniredis wraps a command's error inside a script
		// differently, so only the real servers are held to it for WRONGTYPE.)
		want := map[string]error{"BADARG": bindings.ErrBadArg, "WRONGTYPE": bindings.ErrWrongType}[strings.Fields(wantErr.Error())[0]]
		if viaTyped && want != nil && (!s.tr.exact || want == bindings.ErrBadArg) && !errors.Is(err, want) {
			t.Fatalf("step %d %v: %s: errors.Is(%v, %v) is false", i, argv, s.tr.name, err, want)
		}
		return
	}
	if diff := cmp.Diff(wantReply, normalize(got)); diff != "" {
		t.Fatalf("step %d %v: gopher-lua (-) vs %s (+):\n%s", i, argv, s.tr.name, diff)
	}
	if st.Want != nil {
		if diff := cmp.Diff(st.Want, ints(got)); diff != "" {
			t.Fatalf("step %d %v: table (-) vs %s (+):\n%s", i, argv, s.tr.name, diff)
		}
	}
	// The table's PTTLs hold for its own clock; here the gopher-lua tier,
	// given the same arguments, says what they must be.
	wrote := st.Args[scenario.SpecOf(s.sc.Script).CostArg] != "0" && ints(got)[0] == 1
	if st.TTL == nil || !(s.tr.exact || wrote) {
		return
	}
	for j, k := range s.keys {
		pttl, err := s.c.(redis.Cmdable).PTTL(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := pttl.Milliseconds()
		if pttl < 0 {
			got = int64(pttl / time.Nanosecond) // -1 and -2 come back unscaled
		}
		want := s.ref.PTTL(s.sc.Keys[j])
		if got == -2 && want > 0 && want <= ttlSlack && !s.tr.exact {
			got = want // a key of a few ms expired on the wall clock meanwhile
		}
		if got != want && (s.tr.exact || want < 0 || got > want || got < want-ttlSlack) {
			t.Fatalf("step %d %v: PTTL %s = %d ms, want %d", i, argv, s.sc.Keys[j], got, want)
		}
	}
}

// persist keeps a real server's keys until the next step: a key with a TTL
// of a few ms could expire on the wall clock between two steps that are a
// µs apart in the table. The scripts never rely on expiry (stale state
// reads as fresh), which the gopher-lua tier, where keys do expire on the
// table's clock, checks reply for reply.
func persist(t *testing.T, c redis.Scripter, keys []string) {
	for _, k := range keys {
		if err := c.(redis.Cmdable).Persist(context.Background(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// sameError compares error replies: the same text, except that servers word
// their own errors (WRONGTYPE) differently around the code.
func sameError(want, got error) bool {
	if want == nil || got == nil {
		return want == got
	}
	w, g := want.Error(), scriptErrorText(got)
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
