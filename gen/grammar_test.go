package gen

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The extended grammar: enum(a|b), unix_* instants and [lo..hi] bounds.
func TestParseTypes(t *testing.T) {
	tests := []struct {
		word string
		want Field
		msg  string
	}{
		{word: "int", want: Field{Type: Int}},
		{word: "unix_us", want: Field{Type: UnixUs}},
		{word: "enum(smooth|interval)", want: Field{Type: Enum, Enum: []string{"smooth", "interval"}}},
		{word: "enum(GET|set-x|a_b|1)", want: Field{Type: Enum, Enum: []string{"GET", "set-x", "a_b", "1"}}},
		{word: "int[1..1e9]", want: Field{Type: Int, Min: &Bound{Text: "1", Int: 1}, Max: &Bound{Text: "1e9", Int: 1e9}}},
		{word: "int[0..]", want: Field{Type: Int, Min: &Bound{Text: "0"}}},
		{word: "int[..-5]", want: Field{Type: Int, Max: &Bound{Text: "-5", Int: -5}}},
		{word: "ms[1..1e11]", want: Field{Type: Millis, Min: &Bound{Text: "1", Int: 1}, Max: &Bound{Text: "1e11", Int: 1e11}}},
		{word: "unix_us[0..2^52]", want: Field{Type: UnixUs, Min: &Bound{Text: "0"}, Max: &Bound{Text: "2^52", Int: 1 << 52}}},
		{word: "float[0..0.5]", want: Field{Type: Float, Min: &Bound{Text: "0"}, Max: &Bound{Text: "0.5", Float: 0.5}}},
		{word: "itn", msg: `unknown type "itn" (want int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b))`},
		{word: "enum", msg: `enum: write the words in parentheses, separated by |, like enum(smooth|interval); got "enum"`},
		{word: "enum(a|a)", msg: `enum word "a" is listed twice`},
		{word: "enum(a||b)", msg: `enum word "": use letters, digits, _ and -, starting with a letter or digit`},
		{word: "enum(a|b)[1..2]", msg: `enum: write the words in parentheses, separated by |, like enum(smooth|interval); got "enum(a|b)[1..2]"`},
		{word: "string[1..2]", msg: "string cannot have bounds: only numbers, durations and instants can"},
		{word: "bool[0..1]", msg: "bool cannot have bounds: only numbers, durations and instants can"},
		{word: "int[1-5]", msg: `bounds "[1-5]": write them as int[lo..hi], either side may be empty, no spaces`},
		{word: "int[..]", msg: "bounds int[..] say nothing: give lo, hi or both"},
		{word: "int[5..1]", msg: "bounds [5..1]: the lower bound is above the upper"},
		{word: "int[1.5..2]", msg: `bound "1.5" is not an integer (write 1000, 1e9 or 2^52)`},
		{word: "int[0..1e19]", msg: `bound "1e19" does not fit in an int64`},
		{word: "int[0..2^63]", msg: `bound "2^63" does not fit in an int64`},
		{word: "float[0..inf]", msg: `bound "inf" is not a finite number`},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			var got Field
			msg := parseType(tt.word, &got)
			if tt.msg != "" {
				if msg != tt.msg {
					t.Errorf("message %q, want %q", msg, tt.msg)
				}
				return
			}
			if msg != "" {
				t.Fatalf("unexpected message %q", msg)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrammarMessages(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "later reads of a bound index are fine",
			src: lua("--- s", "--- @arg limit int", "--- @arg window int", "--- @return r int",
				"local limit = tonumber(ARGV[1])", "local window = tonumber(ARGV[2])",
				"local n = 0", "for i = 1, 3 do n = n + tonumber(ARGV[2]) end",
				"if ARGV[1] == '0' then return 0 end", "return n + limit + window"),
		},
		{
			name: "read but never bound",
			src: lua("--- s", "--- @arg limit int", "--- @return r int",
				"if ARGV[1] == '0' then return 0 end", "return 1"),
			want: []string{`x.lua:4: ARGV[1] is read but never bound: bind it once in "local limit = ...ARGV[1]..." (later reads may be anywhere)`},
		},
		{
			name: "Lua keyword as a name",
			src:  lua("--- s", "--- @key end", "--- @arg local int", "--- @return end int", "return 1"),
			want: []string{
				"x.lua:2: @key end: end is a Lua keyword, so no local can bind it; rename it (like end_key)",
				"x.lua:3: @arg local: local is a Lua keyword, so no local can bind it; rename it (like local_arg)",
			},
		},
		{
			name: "enum with spaces",
			src: lua("--- s", "--- @arg mode enum(a | b)  how", "--- @return r int",
				"local mode = ARGV[1]", "return 1"),
		},
		{
			name: "shebang flags disagree with @flags",
			src: lua("#!lua", "--- s", "--- @flags no-writes", "--- @return r int",
				"return redis.call('GET', KEYS[1]) -- luagen:ignore shebang"),
			want: []string{"x.lua:1: #! line says flags=(none) but @flags says no-writes: Redis reads the #! line, luagen and other stacks read @flags; list the same flags in both"},
		},
		{
			name: "bad shebang",
			src:  lua("#!lua name=x flags=fast", "--- s", "--- @return r int", "return 1 -- luagen:ignore shebang"),
			want: []string{
				`x.lua:1: #! line: unknown flag "fast" (want no-writes, allow-oom, allow-stale, no-cluster or allow-cross-slot-keys)`,
				`x.lua:1: #! line: unknown option "name=x": Redis accepts only flags=a,b on a script's #!lua line`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ParseScript("x.lua", []byte(tt.src))
			if diff := cmp.Diff(tt.want, diagStrings(diags)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// Huge exponents neither hang nor wrap around.
func TestBoundExponents(t *testing.T) {
	for word, want := range map[string]string{
		"int[0e999999999..1]":           "",
		"int[1e99999999999999999999..]": `bound "1e99999999999999999999" does not fit in an int64`,
		"int[2^99999999999999999999..]": `bound "2^99999999999999999999" does not fit in an int64`,
		"int[1e18..9e18]":               "",
		"int[1e19..]":                   `bound "1e19" does not fit in an int64`,
	} {
		var f Field
		if got := parseType(word, &f); got != want {
			t.Errorf("%s: %q, want %q", word, got, want)
		}
	}
}

func TestLead(t *testing.T) {
	for first, want := range map[string]string{
		"Counts a hit against a quota.":          "counts a hit against a quota.",
		"Token bucket: takes cost tokens from a": "takes cost tokens from a",
		"GCRA, the generic cell rate algorithm":  "runs x.lua: GCRA, the generic cell rate algorithm",
		"Access list.":                           "runs x.lua: Access list.",
		"Fixed window: counts cost against":      "counts cost against",
		"A note: this is not a verb":             "runs x.lua: A note: this is not a verb",
	} {
		if got := lead(first, "x.lua"); got != want {
			t.Errorf("lead(%q) = %q, want %q", first, got, want)
		}
	}
}
