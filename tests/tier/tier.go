// Package tier runs the scenario tables (tests/scenario) on one server
// through one client, step by step beside the gopher-lua tier given the
// very same arguments: every reply, error and PTTL must agree. tests/servers
// runs it on miniredis, a real redis-server, a Redis Cluster and the
// Functions library over go-redis; the nested modules of other clients
// (clients/rueidis, clients/valkey) run it over their redis.Scripter.
package tier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	luatest "github.com/redlimit/redlimit/tests/lua"
	"github.com/redlimit/redlimit/tests/scenario"
)

// A Tier is one kind of server and the client the scripts go through.
type Tier struct {
	Name string
	// Exact tiers control the server clock (SetTime), so scenarios run as
	// written and every PTTL is checked. The real servers keep their own
	// clock: there a scenario runs from an instant near it, every step
	// sends its instant as the caller clock (the scripts take one only
	// within 60 s of their TIME), the gopher-lua tier it is compared with
	// reads the real server's TIME before each step, and a PTTL is checked
	// only right after a write, within TTLSlack.
	Exact   bool
	SetTime func(us int64) // Exact tiers only
	// ViaLibrary sends every call through the Functions library
	// (bindings/redlimit.functions.lua): the typed API over
	// bindings.WithFunctions, raw ARGV with FCALL. Scripts must then be a
	// bindings.FunctionsCmdable and a redis.Cmdable.
	ViaLibrary bool
	// Scripts carries every script call: the typed API (ratelimit and the
	// bindings) and raw EVALSHA, falling back to EVAL.
	Scripts redis.Scripter
	// State is where the runner presets and reads keys and reads TIME; a
	// go-redis client of the same server (Scripts itself where it is one).
	State redis.Cmdable
	// Typed, when set, is the typed API instead of ratelimit over the
	// go-redis bindings: generated bindings for another client (see
	// Reflected). Sentinels are its package's error sentinels by code
	// (BADARG, WRONGTYPE, BADSTATE), which typed errors must match.
	Typed     func(ctx context.Context, script string, keys, argv []string) ([]any, error)
	Sentinels map[string]error
	// MultiKey, when set, sends every step through its script's
	// multi-key form (bindings.MultiKeyForm) with raw ARGV instead: as
	// the form's only call, or between two calls on other keys of the
	// step's slot (see MultiKeyMode).
	MultiKey MultiKeyMode
}

// MultiKeyMode is how a tier sends steps through the multi-key form.
type MultiKeyMode int

const (
	// MultiKeyAlone sends each step as the one call of the form.
	MultiKeyAlone MultiKeyMode = iota + 1
	// MultiKeyAmong sends each step as the second of three calls: the
	// same ARGV on keys of the step's slot that the table never uses
	// comes before and after it, each element answered as the gopher-lua
	// tier answers that call of its own. A script that takes the form's
	// layout itself (bindings.MultiKeyItself) gets the three calls itself,
	// as ratelimit sends them.
	MultiKeyAmong
)

// TTLSlack is how many ms a real server's clock may move during a step.
const TTLSlack = 250

// TTLAhead is how much longer than the gopher-lua tier's a real server's
// PTTL may read: its expiry clock is cached (see step).
const TTLAhead = 50 // ms

// Run runs every scenario table on tr, each as a subtest, and checks that
// both the typed API and raw calls were exercised, every script through
// the typed API.
func Run(t *testing.T, tr Tier) {
	run := fmt.Sprintf("run%d:%s:", time.Now().UnixNano(), tr.Name)
	n := paths{byScript: map[string]int{}, codes: map[string]int{}}
	defer func() {
		if tr.MultiKey != 0 {
			// Every step went through the form (the typed API does not
			// send it); each kind of error must have come back inside
			// its reply.
			if !t.Failed() && (n.multi < 500 || n.codes["BADARG"] < 20 || n.codes["WRONGTYPE"] < 3 || n.codes["BADSTATE"] < 20) {
				t.Errorf("%d steps through the multi-key form, errors in its replies %v: too few to show each call answered as its own", n.multi, n.codes)
			}
			if !t.Failed() && tr.MultiKey == MultiKeyAmong && n.itself < 200 {
				t.Errorf("%d steps sent to a script that takes the form's layout itself: too few", n.itself)
			}
			t.Logf("%d steps through the multi-key form (%d to the script itself); errors in its replies: %v", n.multi, n.itself, n.codes)
			return
		}
		if !t.Failed() && (n.typed < 100 || n.raw < 20) {
			t.Errorf("%d steps went through the typed API and %d raw: both paths must be exercised", n.typed, n.raw)
		}
		for _, script := range scenario.Scripts() {
			if !t.Failed() && n.byScript[script] < 3 {
				t.Errorf("%s: %d steps went through the typed API", script, n.byScript[script])
			}
		}
	}()
	for _, sc := range scenario.All() {
		t.Run(sc.Script+"/"+sc.Name, func(t *testing.T) {
			if !tr.Exact {
				if span, align := sc.Span(), sc.Align(); span > realSpan || align > realAlign {
					t.Skipf("spans %v of clock and aligns to %v: a real server takes a caller clock only within 60 s of its own, so this table runs on the gopher-lua and miniredis tiers only", span, align)
				}
				sc = withCallerClock(sc)
			}
			runTier(t, tr, run, sc, &n)
		})
	}
}

// On a real server a scenario runs from realLead after its TIME, rounded
// up to the windows it needs aligned: a call on an empty key with a caller
// clock behind the server's is judged at the server's clock, so the steps'
// clocks must not fall behind TIME while the run lasts (realLead covers a
// slow run on a loaded machine). realSpan is the most a scenario's clocks
// may span and realAlign the longest alignment, so that every step stays
// inside the 60 s a caller clock may differ from TIME.
const (
	realLead  = 5 * time.Second
	realSpan  = 40 * time.Second
	realAlign = 10 * time.Second
)

// withCallerClock turns server-clock steps into caller-clock steps.
func withCallerClock(sc scenario.Scenario) scenario.Scenario {
	sc.CallerClock = true
	return sc
}

// stepper runs one scenario on one tier, next to the gopher-lua tier.
type stepper struct {
	t      *testing.T
	tr     Tier
	c      redis.Scripter // the client raw calls go through
	state  redis.Cmdable  // the server's keys and clock
	typedC redis.Scripter // what the typed API is given: c, or c through the library
	sc     scenario.Scenario
	script *redis.Script
	src    string
	keys   []string // the scenario's keys, prefixed for this run
	ref    *luatest.Redis
	paths  *paths
	shift  int64     // µs the run's clocks are moved from the table's T0
	table  int       // the table's number in the run (paths.tables)
	read   time.Time // when the gopher-lua tier last took the server's TIME
}

// paths counts the calls that went through the typed API and the raw one,
// and the typed ones per script.
type paths struct {
	typed, raw int
	byScript   map[string]int
	// multi counts the steps sent through the multi-key form; codes, the
	// error codes that came back as elements of its replies.
	multi int
	codes map[string]int
	// itself counts the steps sent to a script that takes the form's
	// layout itself (bindings.MultiKeyItself).
	itself int
	// tables counts the tables run, to name each one's neighbour keys
	// apart: tables may share keys, which they preset, but not these.
	tables int
}

func runTier(t *testing.T, tr Tier, run string, sc scenario.Scenario, n *paths) {
	c := tr.Scripts
	src, err := luatest.Source(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	s := stepper{t: t, tr: tr, c: c, state: tr.State, typedC: c, sc: sc, script: Scripts[sc.Script], src: src, ref: luatest.New(scenario.T0), paths: n, table: n.tables}
	n.tables++
	if tr.ViaLibrary {
		s.typedC = bindings.WithFunctions(c.(bindings.FunctionsCmdable))
	}
	if s.script == nil || typed[sc.Script] == nil {
		t.Fatalf("%s has no generated binding listed in tests/tier/typed.go", sc.Script)
	}
	for _, k := range sc.Keys {
		s.keys = append(s.keys, run+k) // the prefix sits outside the {hash tag}
	}
	// A real server runs the table from realLead after its own clock,
	// rounded up to the windows the table needs aligned; the others from
	// the table's T0.
	base := int64(scenario.T0)
	if !tr.Exact {
		now := ServerTime(t, s.state)
		align := sc.Align().Microseconds()
		base = (now + realLead.Microseconds() + align - 1) / align * align
		s.shift = base - scenario.T0
		s.ref.SetTime(now)
	}
	ctx := context.Background()
	for k, v := range sc.Strings {
		s.ref.Set(k, v)
		if err := s.state.Set(ctx, run+k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if sc.Preset != nil {
		for _, p := range sc.Preset(base) {
			s.ref.Put(p)
			p.Key = run + p.Key
			if err := preset(ctx, s.state, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock := int64(scenario.T0)
	for i, st := range sc.Steps {
		clock = max(clock, st.ServerAt())
		if tr.Exact {
			s.ref.SetTime(clock)
			tr.SetTime(clock)
		} else {
			s.read = time.Now()
			s.ref.SetTime(max(s.ref.Now(), ServerTime(t, s.state)))
		}
		s.step(i, st)
	}
}

// ServerTime reads a real server's TIME, in µs.
func ServerTime(t testing.TB, c redis.Cmdable) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMicro()
}

// preset creates a scenario's preset key on a server.
func preset(ctx context.Context, c redis.Cmdable, p scenario.Preset) error {
	args := make([]any, len(p.Vals))
	for i, v := range p.Vals {
		args[i] = v
	}
	var err error
	switch p.Type {
	case "string":
		err = c.Set(ctx, p.Key, p.Vals[0], 0).Err()
	case "hash":
		err = c.HSet(ctx, p.Key, args...).Err()
	case "zset":
		var zs []redis.Z
		for i := 0; i+1 < len(p.Vals); i += 2 {
			score, perr := strconv.ParseFloat(p.Vals[i], 64)
			if perr != nil {
				return perr
			}
			zs = append(zs, redis.Z{Score: score, Member: p.Vals[i+1]})
		}
		err = c.ZAdd(ctx, p.Key, zs...).Err()
	case "list":
		err = c.RPush(ctx, p.Key, args...).Err()
	default:
		err = fmt.Errorf("preset %s: type %q", p.Key, p.Type)
	}
	if err == nil && p.TTL > 0 {
		err = c.PExpire(ctx, p.Key, time.Duration(p.TTL)*time.Millisecond).Err()
	}
	return err
}

// send makes one call through the typed API of the generated bindings, or,
// for arguments it cannot express (and for keyless calls), through the
// bindings' script with raw ARGV.
func (s *stepper) send(argv []string) (reply any, viaTyped bool, err error) {
	ctx := context.Background()
	if Canonical(argv) {
		var got []any
		var err error
		if s.tr.Typed != nil {
			got, err = s.tr.Typed(ctx, s.sc.Script, s.keys, argv)
		} else {
			got, err = typed[s.sc.Script](ctx, s.typedC, s.keys, &rawArgs{vals: argv, ok: true})
		}
		if err != ErrNotTyped {
			s.paths.typed++
			s.paths.byScript[s.sc.Script]++
			return got, true, err
		}
	}
	s.paths.raw++
	args := make([]any, len(argv))
	for j, a := range argv {
		args[j] = a
	}
	if s.tr.ViaLibrary {
		reply, err = s.c.(redis.Cmdable).FCall(ctx, bindings.FunctionsLibrary+"_"+s.sc.Script, s.keys, args...).Result()
		return reply, false, err
	}
	reply, err = s.script.Run(ctx, s.c, s.keys, args...).Result()
	return reply, false, err
}

// step sends one step to both tiers and compares replies and PTTLs.
func (s *stepper) step(i int, st scenario.Step) {
	t := s.t
	t.Helper()
	argv := s.sc.ArgvFrom(scenario.T0+s.shift, st)
	if st.Now == "" && s.sc.CallerClock && s.shift != 0 {
		argv[scenario.SpecOf(s.sc.Script).ClockIndex(argv)] = fmt.Sprint(scenario.T0 + s.shift + st.At.Microseconds())
	}
	if st.Deadline == "" && st.DeadlineIn != 0 {
		// The deadline counts from the server's clock: on a real server,
		// its TIME as last read (the run is ahead of it by realLead).
		argv[scenario.SpecOf(s.sc.Script).DeadlineIndex(argv)] = fmt.Sprint(s.ref.Now() + st.DeadlineIn.Microseconds())
	}
	before := s.dump()
	wantReply, wantErr := s.ref.Eval(s.src, s.sc.Keys, argv)
	var got any
	var viaTyped bool
	var err error
	if s.tr.MultiKey != 0 {
		got, err = s.sendMultiKey(i, argv, wantErr)
	} else {
		got, viaTyped, err = s.send(argv)
	}
	wrote := err == nil && scenario.SpecOf(s.sc.Script).Wrote(argv, ints(got))
	if !wrote {
		// An error, a denial and a peek leave every key as it was.
		if after := s.dump(); after != before {
			t.Fatalf("step %d %v: %s: a call that must change nothing changed the keys:\n%s->\n%s", i, argv, s.tr.Name, before, after)
		}
	}
	if wantErr != nil || err != nil {
		if !SameError(wantErr, err) {
			t.Fatalf("step %d %v: gopher-lua says %v, %s says (%v, %v)", i, argv, wantErr, s.tr.Name, got, err)
		}
		// Through the typed API, declared error codes come back as
		// sentinels. (miniredis wraps a command's error inside a script
		// differently, so only the real servers are held to it for WRONGTYPE.)
		sentinels := s.tr.Sentinels
		if sentinels == nil {
			sentinels = map[string]error{"BADARG": bindings.ErrBadArg, "WRONGTYPE": bindings.ErrWrongType, "BADSTATE": bindings.ErrBadState, "EXPIRED": bindings.ErrExpired}
		}
		want := sentinels[strings.Fields(wantErr.Error())[0]]
		if viaTyped && want != nil && !errors.Is(err, want) {
			t.Fatalf("step %d %v: %s: errors.Is(%v, %v) is false", i, argv, s.tr.Name, err, want)
		}
		return
	}
	if diff := cmp.Diff(wantReply, Normalize(got)); diff != "" {
		t.Fatalf("step %d %v: gopher-lua (-) vs %s (+):\n%s", i, argv, s.tr.Name, diff)
	}
	if st.Want != nil {
		if diff := cmp.Diff(st.Want, ints(got)); diff != "" {
			t.Fatalf("step %d %v: table (-) vs %s (+):\n%s", i, argv, s.tr.Name, diff)
		}
	}
	// The table's PTTLs hold for its own clock; here the gopher-lua tier,
	// given the same arguments, says what they must be.
	if st.TTL == nil || !(s.tr.Exact || wrote) {
		return
	}
	for j, k := range s.keys {
		pttl, err := s.state.PTTL(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := pttl.Milliseconds()
		if pttl < 0 {
			got = int64(pttl / time.Nanosecond) // -1 and -2 come back unscaled
		}
		want := s.ref.PTTL(s.sc.Keys[j])
		if got == -2 && want > 0 && want <= TTLSlack && !s.tr.Exact {
			got = want // a key of a few ms expired on the wall clock meanwhile
		}
		if got != want && (s.tr.Exact || want < 0 || !PTTLAgrees(got, want, s.read)) {
			t.Fatalf("step %d %v: PTTL %s = %d ms, want %d", i, argv, s.sc.Keys[j], got, want)
		}
	}
}

// PTTLAgrees reports whether a real server's PTTL, got, agrees with the
// gopher-lua tier's, want, computed at the server's TIME read at since. The
// server's may be shorter by the time that has passed since (at least
// TTLSlack; a loaded machine can take longer between the two readings),
// and a few ms longer: it counts expiry in whole ms from a cached clock (the
// start of the command, or of the event loop's turn, which a loaded machine
// can leave a few ms behind), the gopher-lua tier from the µs it read TIME
// at.
func PTTLAgrees(got, want int64, since time.Time) bool {
	slack := max(TTLSlack, time.Since(since).Milliseconds()+1)
	return got <= want+TTLAhead && got >= want-slack
}

// Canonical reports whether every number in argv is spelled as Go formats
// it: the typed API reads them with strconv.ParseInt, which takes "+1" and
// "01" and would send them as "1", so other spellings go raw.
func Canonical(argv []string) bool {
	for _, a := range argv {
		if n, err := strconv.ParseInt(a, 10, 64); err == nil && strconv.FormatInt(n, 10) != a {
			return false
		}
	}
	return true
}

// dump is every key of the scenario, its type and content, and whether it
// has a TTL: what a call that must change nothing must leave as it was.
// (miniredis has no DUMP for hashes; reading by type works everywhere.)
func (s *stepper) dump() string {
	ctx := context.Background()
	c := s.state
	var b strings.Builder
	for _, k := range s.keys {
		typ, err := c.Type(ctx, k).Result()
		if err != nil {
			s.t.Fatal(err)
		}
		var v any
		switch typ {
		case "string":
			v, err = c.Get(ctx, k).Result()
		case "hash":
			v, err = c.HGetAll(ctx, k).Result()
		case "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "list":
			v, err = c.LRange(ctx, k, 0, -1).Result()
		}
		if err != nil {
			s.t.Fatal(err)
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			s.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %v ttl=%v\n", k, typ, v, ttl >= 0)
	}
	return b.String()
}

// SameError compares error replies: the same text, except that servers word
// their own errors (WRONGTYPE) differently around the code.
func SameError(want, got error) bool {
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

// Normalize copies a reply's nested slices, as cmp wants them.
func Normalize(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, el := range v {
			out[i] = Normalize(el)
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
