package luatest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/gen"
	"github.com/redlimit/redlimit/tests/scenario"
)

// bad are the numbers no integer argument takes.
var bad = []string{"", "abc", "nan", "-nan", "inf", "-inf", "1.5", "-1", "1e300", "2^53", " ",
	"1e3", "1E3", "0x10", "0X1", " 5", "5 ", "\t5", "5\n", "+5", "5\x00junk", "1e-400", "007", "01", "-0",
	"1.0", "5.", ".5", "0b1", "1_000", "١", "9007199254740993", "99999999999999999999999"}

// TestEveryNumberRejectsBadInput goes by the header, not by the tables: for
// every numeric argument of every script, every kind of bad value is a
// BADARG reply naming that argument as the header does, and it changes
// nothing. That includes every spelling Lua's tonumber takes but Redis
// would not write: exponents, hex, spaces, a sign, leading zeros, a NUL and
// what follows it, an underflow to 0. A variadic argument (multi's limits)
// is swept at every position it fills. Cutting ARGV short anywhere is a
// BADARG too, and so are an extra argument, an extra key, and a call
// without its key. A script whose last argument is an optional variadic (a
// settle: leaky_bucket's word, the windows' word and instant) is swept
// twice: from a write without it and from one with it.
func TestEveryNumberRejectsBadInput(t *testing.T) {
	for _, name := range scenario.Scripts() {
		t.Run(name, func(t *testing.T) {
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			header := parseHeader(t, name, src)
			sweepBadInput(t, name, src, header, 0)
			if last := header.Args[len(header.Args)-1]; last.Variadic && last.MinCount != nil && last.MinCount.Int == 0 {
				width := 1
				if last.Type == gen.Record {
					width = len(last.Fields)
				}
				t.Run("with "+last.Name, func(t *testing.T) { sweepBadInput(t, name, src, header, len(header.Args)-1+width) })
			}
		})
	}
}

// sweepBadInput is TestEveryNumberRejectsBadInput's sweep from the first
// write of name's tables with at least minArgs arguments.
func sweepBadInput(t *testing.T, name, src string, header *gen.Script, minArgs int) {
	r, keys, good := firstWrite(t, name, src, minArgs)
	fixed := len(header.Args) - 1
	last := header.Args[fixed]
	// optional: the last argument may be absent, and good has none
	// of it: an argument past good starts it.
	optional := last.Variadic && last.MinCount != nil && last.MinCount.Int == 0 && len(good) == fixed
	checked := map[string]bool{}
	for i, arg := range header.Args {
		var values func(j int) []string // the bad values at ARGV position j
		switch {
		case len(arg.Enum) > 0:
			// Any word but the declared ones, and the right word
			// in another case or with a space.
			values = func(int) []string {
				return []string{"", "0", "1", "nil", strings.ToUpper(arg.Enum[0]), " " + arg.Enum[0], arg.Enum[0] + "\x00"}
			}
		case arg.Type.IsInteger():
			values = func(int) []string { return badNumbers(arg) }
		case arg.Type == gen.Record:
			// multi's limits, a batch script's requests: each
			// position is a field of a record.
			values = func(j int) []string { return badNumbers(arg.Fields[(j-i)%len(arg.Fields)]) }
			for _, f := range arg.Fields {
				checked[f.Name] = true
			}
		default:
			continue
		}
		checked[arg.Name] = true
		positions := []int{i}
		if arg.Variadic {
			positions = nil
			for j := i; j < len(good); j++ {
				positions = append(positions, j)
			}
		}
		for _, j := range positions {
			for _, v := range values(j) {
				argv := append([]string(nil), good...)
				argv[j] = v
				// A variadic argument's message names the element
				// (multi: "burst of limit 2"); multi_test.go checks
				// each name.
				prefix := "BADARG " + arg.Name + " "
				if arg.Variadic {
					prefix = "BADARG "
				}
				expectBadArg(t, r, src, keys, argv, prefix)
			}
		}
	}
	// A header whose types stop being read as numbers must not
	// quietly empty this sweep.
	must := []string{"now", "deadline"}
	if scenario.SpecOf(name).CostArg >= 0 {
		must = append(must, "cost")
	}
	for _, name := range must {
		if !checked[name] {
			t.Errorf("%s was not swept: its header type is %q", name, header.Args[len(header.Args)-1].Type)
		}
	}
	for n := 0; n < len(good); n++ {
		if n == fixed && last.MinCount != nil && last.MinCount.Int == 0 {
			continue // the optional argument absent: a good call
		}
		expectBadArg(t, r, src, keys, good[:n], "BADARG ")
	}
	// A variadic record's count, from its header: one record past
	// the most, and none where at least one is needed.
	if last.Variadic && last.Type == gen.Record && last.MaxCount != nil && len(good) >= fixed+len(last.Fields) {
		one := good[fixed : fixed+len(last.Fields)]
		over := append([]string(nil), good[:fixed]...)
		for k := int64(0); k <= last.MaxCount.Int; k++ {
			over = append(over, one...)
		}
		// (multi's count is its keys': a missing limit is named.)
		countErr := "BADARG takes "
		if header.Keys[0].Variadic {
			countErr = "BADARG "
		}
		expectBadArg(t, r, src, keys, over, countErr)
		if last.MinCount != nil && last.MinCount.Int >= 1 {
			expectBadArg(t, r, src, keys, good[:fixed], countErr)
		}
	}
	extra := "BADARG takes "
	if optional {
		extra = "BADARG "
	}
	expectBadArg(t, r, src, keys, append(append([]string(nil), good...), "1"), extra)
	expectBadArg(t, r, src, keys, append(append([]string(nil), good...), ""), extra)
	// One key more: one limit more for multi, whose numbers are
	// then missing.
	extraKey := "BADARG takes "
	switch {
	case header.Keys[0].Variadic:
		extraKey = "BADARG "
	case header.MultiItself: // 2 keys are the multi-key form's layout
		extraKey = "BADARG multi-key call: "
	}
	expectBadArg(t, r, src, append(append([]string(nil), keys...), "other"), good, extraKey)
	// Without its key a script fails before it sends anything.
	// (A script of many keys says how many it takes.)
	want := "BADARG " + header.Keys[0].Name + " key is missing"
	if k := header.Keys[0]; k.Variadic {
		want = fmt.Sprintf("BADARG takes 1 to %d keys", k.MaxCount.Int)
	}
	got, err := r.Eval(src, nil, good)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("no key: got (%v, %v), want %q", got, err, want)
	}
	if len(r.Commands()) != 0 {
		t.Errorf("no key: sent %v before failing", r.Commands())
	}
}

func parseHeader(t *testing.T, name, src string) *gen.Script {
	t.Helper()
	s, diags := gen.ParseScript(name+".lua", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("header: %v", diags)
	}
	return s
}

// firstWrite replays a script's first scenario up to its first admitted
// write, so the bad calls meet a key that holds state.
func firstWrite(t *testing.T, name, src string, minArgs int) (*Redis, []string, []string) {
	t.Helper()
	for _, sc := range scenario.All() {
		if sc.Script != name || sc.Strings != nil || sc.Preset != nil {
			continue
		}
		r := New(scenario.T0)
		for _, st := range sc.Steps {
			r.SetTime(max(r.Now(), scenario.T0+st.At.Microseconds()))
			argv := sc.Argv(st)
			got, err := r.Eval(src, sc.Keys, argv)
			if err == nil && len(argv) >= minArgs && scenario.SpecOf(name).Wrote(argv, ints64(got)) {
				return r, sc.Keys, argv
			}
		}
	}
	t.Fatalf("%s: no scenario admits a write of %d arguments or more", name, minArgs)
	return nil, nil, nil
}

func expectBadArg(t *testing.T, r *Redis, src string, keys, argv []string, prefix string) {
	t.Helper()
	before := r.Snapshot()
	got, err := r.Eval(src, keys, argv)
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%q: got (%v, %v), want an error starting %q", argv, got, err, prefix)
	}
	if after := r.Snapshot(); !before.Equal(after) {
		t.Errorf("%q changed state:\n%s->\n%s", argv, before, after)
	}
}

// badNumbers are the values an integer field f refuses: the sweep's bad
// numbers, 0 (meaningless for every number but cost, now and deadline),
// and one past each bound, unless that is a sentinel (now's server_clock,
// deadline's none: 0 means something).
func badNumbers(f gen.Field) []string {
	values := append([]string(nil), bad...)
	sentinel := func(n int64) bool {
		for _, s := range f.Sentinels {
			if s.Value.Int == n {
				return true
			}
		}
		return false
	}
	if f.Name != "cost" && f.Name != "now" && f.Name != "deadline" && !sentinel(0) {
		values = append(values, "0")
	}
	if f.Min != nil && !sentinel(f.Min.Int-1) {
		values = append(values, strconv.FormatInt(f.Min.Int-1, 10))
	}
	if f.Max != nil && !sentinel(f.Max.Int+1) {
		values = append(values, strconv.FormatInt(f.Max.Int+1, 10))
	}
	return values
}
