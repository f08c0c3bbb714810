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

// Round 3: sentinels, patterns, counts and records parse into the Field,
// and every malformed form is a message, never a panic or bad Go.
func TestParseRound3(t *testing.T) {
	b := func(text string, n int64) *Bound { return &Bound{Text: text, Int: n} }
	tests := []struct {
		word string
		want Field
		msg  string
	}{
		{word: "ms[0..]|never=-1", want: Field{Type: Millis, Min: b("0", 0), Sentinels: []Sentinel{{"never", *b("-1", -1)}}}},
		{word: "unix_us[1..2^52]|server_clock=0", want: Field{Type: UnixUs, Min: b("1", 1), Max: b("2^52", 1<<52), Sentinels: []Sentinel{{"server_clock", *b("0", 0)}}}},
		{word: "int[1..9]|none=0|all=-1", want: Field{Type: Int, Min: b("1", 1), Max: b("9", 9), Sentinels: []Sentinel{{"none", *b("0", 0)}, {"all", *b("-1", -1)}}}},
		{word: "string/^[a-z]{1,4}$/", want: Field{Type: String, Pattern: "^[a-z]{1,4}$"}},
		{word: "string/^(a|b)$/", want: Field{Type: String, Pattern: "^(a|b)$"}},
		{word: "ms[0..]|never", msg: `sentinel "never": write name=value, like never=-1`},
		{word: "ms[0..]|Never=-1", msg: "sentinel Never: name must be lower case letters, digits and _ (like server_clock)"},
		{word: "ms[0..]|never=-1|never=-2", msg: "sentinel never is listed twice"},
		{word: "ms[0..]|a=-1|b=-1", msg: "sentinels a and b are both -1"},
		{word: "ms[0..]|never=5", msg: "sentinel never=5 is inside the bounds [0..]: a sentinel must be a value no ordinary one can be"},
		{word: "ms|never=-1", msg: "sentinel never=-1 is inside the bounds [..]: a sentinel must be a value no ordinary one can be"},
		{word: "ms[0..]|never=x", msg: `sentinel never: bound "x" is not an integer (write 1000, 1e9 or 2^52)`},
		{word: "unix_us[1..]|later=5", msg: "sentinel later=5: an instant's sentinel must be 0, which Go sends and reads as the zero time.Time"},
		{word: "float[0..1]|none=-1", msg: "float cannot have sentinels (|name=value): only int, durations and instants can"},
		{word: "string|none=-1", msg: "string cannot have sentinels (|name=value): only int, durations and instants can"},
		{word: "string/^[a-z]+$", msg: "string/^[a-z]+$: write a pattern as string/re/, like string/^[a-z0-9_-]{1,64}$/, no spaces"},
		{word: "string//", msg: "string//: write a pattern as string/re/, like string/^[a-z0-9_-]{1,64}$/, no spaces"},
		{word: `string/^\d+$/`, msg: `pattern ^\d+$: \d reads differently in Go, Python and JavaScript (or not at all); escape only ^$\.*+?()[]{}|/, and write a class such as [0-9] for \d`},
		{word: `string/^[a\_]$/`, msg: `pattern ^[a\_]$: \_ reads differently in Go, Python and JavaScript (or not at all); escape only ^$\.*+?()[]{}|/, and write a class such as [0-9] for \d`},
		{word: `string/^a\.b[\]-]$/`, want: Field{Type: String, Pattern: `^a\.b[\]-]$`}},
		{word: `string/^a\-b$/`, msg: `pattern ^a\-b$: \- reads differently in Go, Python and JavaScript (or not at all); escape only ^$\.*+?()[]{}|/, and write a class such as [0-9] for \d`},
		{word: "string/^(?i)a$/", msg: "pattern ^(?i)a$: (? groups and flags are not portable; write plain groups and classes"},
		{word: "string/^[a-$/", msg: "pattern ^[a-$: error parsing regexp: invalid character class range: `a-$`"},
		{word: "string/[a-z]+/", msg: "pattern [a-z]+: anchor it with ^ and $, so every stack matches the whole string"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			var got Field
			msg := parseType(tt.word, &got)
			if msg != tt.msg {
				t.Fatalf("message %q, want %q", msg, tt.msg)
			}
			if tt.msg == "" {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRecordsAndCounts(t *testing.T) {
	s, diags := ParseScript("x.lua", []byte(lua("--- s",
		"--- @key    ...keys[1..16]   one per limit",
		"--- @arg    ...limits[..16] (burst int[1..1e9], period ms[1..], id string/^[a-z]{1,4}(x|y)$/)  per key",
		"--- @return ...per_limit (remaining int[0..], retry_after ms[0..]|never=-1)",
		"return #KEYS + #ARGV")))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := []Field{
		{Name: "keys", Variadic: true, MinCount: &Bound{Text: "1", Int: 1}, MaxCount: &Bound{Text: "16", Int: 16}, Doc: "one per limit", Line: 2},
		{Name: "limits", Type: Record, Variadic: true, MaxCount: &Bound{Text: "16", Int: 16}, Doc: "per key", Line: 3, Fields: []Field{
			{Name: "burst", Type: Int, Min: &Bound{Text: "1", Int: 1}, Max: &Bound{Text: "1e9", Int: 1e9}},
			{Name: "period", Type: Millis, Min: &Bound{Text: "1", Int: 1}},
			{Name: "id", Type: String, Pattern: "^[a-z]{1,4}(x|y)$"},
		}},
		{Name: "per_limit", Type: Record, Variadic: true, Line: 4, Fields: []Field{
			{Name: "remaining", Type: Int, Min: &Bound{Text: "0"}},
			{Name: "retry_after", Type: Millis, Min: &Bound{Text: "0"}, Sentinels: []Sentinel{{"never", Bound{Text: "-1", Int: -1}}}},
		}},
	}
	if diff := cmp.Diff(want, append(append(s.Keys, s.Args...), s.Returns...)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	bad := []struct{ line, want string }{
		{"--- @arg limits (a int, b int)", "x.lua:2: @arg limits: only a variadic (...limits) can be a record"},
		{"--- @arg ...limits (a int, b int", "x.lua:2: @arg ...limits: the record's fields have no closing ): write (a int, b ms)"},
		{"--- @arg ...limits (a int)", "x.lua:2: @arg ...limits: a record needs two fields or more; a variadic of one type needs no parentheses"},
		{"--- @arg ...limits (a int, a ms)", "x.lua:2: @arg ...limits: record field a is listed twice"},
		{"--- @arg ...limits (a int, , b ms)", "x.lua:2: @arg ...limits: a record field has no name: write (a int, b ms)"},
		{"--- @arg ...limits (a, b)", "x.lua:2: @arg ...limits: record field a: missing type (want int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b))"},
		{"--- @key ...pairs (a int, b)", "x.lua:2: @key ...pairs: record field a: a key has no type (write (a, b))"},
		{"--- @arg ...limits (a int[1..] doc, b ms)", `x.lua:2: @arg ...limits: record field a: "int[1..] doc": one type word per field, no spaces and no doc`},
		{"--- @arg ...limits (a enum(x|y), b ms)", "x.lua:2: @arg ...limits: record field a: an enum cannot be a record field; write string (or a pattern, string/^(a|b)$/)"},
		{"--- @arg ...limits (id int, i_d ms)", "x.lua:2: @arg ...limits: record fields id and i_d are both ID in Go; rename one"},
		{"--- @arg ...limits (a itn, b ms)", `x.lua:2: @arg ...limits: record field a: unknown type "itn" (want int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b))`},
		{"--- @arg ...ids[1-5] string", `x.lua:2: @arg ...ids: count "[1-5]": write how many as ...name[lo..hi], either side may be empty, no spaces`},
		{"--- @arg ...ids[..] string", "x.lua:2: @arg ...ids: count [..] says nothing: give lo, hi or both"},
		{"--- @arg ...ids[5..1] string", "x.lua:2: @arg ...ids: count [5..1]: the lower bound is above the upper"},
		{"--- @arg ...ids[-1..] string", "x.lua:2: @arg ...ids: count [-1..]: a count is never negative"},
		{"--- @arg ...ids[..0] string", "x.lua:2: @arg ...ids: count [..0]: the upper bound must be 1 or more"},
		{"--- @arg ...ids[1..x] string", `x.lua:2: @arg ...ids: count: bound "x" is not an integer (write 1000, 1e9 or 2^52)`},
	}
	for _, tt := range bad {
		_, diags := ParseScript("x.lua", []byte(lua("--- s", tt.line, "--- @return r int", "return 1")))
		got := diagStrings(diags)
		if len(got) == 0 || got[0] != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.line, got, tt.want)
		}
	}
}

func TestSingular(t *testing.T) {
	for in, want := range map[string]string{"limits": "limit", "per_limit": "per_limit", "status": "status", "address": "address", "axis": "axis", "pairs": "pair", "s": "s"} {
		if got := singular(in); got != want {
			t.Errorf("singular(%q) = %q, want %q", in, got, want)
		}
	}
}
