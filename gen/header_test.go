package gen

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func diagStrings(ds Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

// lua joins lines with newlines, so line numbers in the table are easy to
// count.
func lua(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestMalformed(t *testing.T) {
	tests := []struct {
		name string
		file string
		src  string
		want []string
	}{
		{
			name: "unknown type",
			src: lua("--- s", "--- @key k", "--- @arg rate flaot", "--- @return r int",
				"local k = KEYS[1]", "local rate = ARGV[1]", "return 1"),
			want: []string{`x.lua:3: @arg rate: unknown type "flaot" (want int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b))`},
		},
		{
			name: "missing type and name",
			src:  lua("--- s", "--- @arg", "--- @return r", "return 1"),
			want: []string{
				"x.lua:2: @arg: missing name",
				"x.lua:3: @return r: missing type (want int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b))",
				"x.lua:3: header declares no @return",
			},
		},
		{
			name: "no header",
			src:  lua("local k = KEYS[1]", "return 1"),
			want: []string{
				"x.lua:1: missing header: a script starts with --- comment lines (summary, @key, @arg, @return)",
			},
		},
		{
			name: "no summary, unknown tag, bad names",
			src: lua("--- @return r int", "--- @retrun x int", "--- @arg Rate int", "--- @error badarg",
				"--- @flags no-writes, fast", "return 1"),
			want: []string{
				"x.lua:1: header has no summary: start it with a line saying what the script does",
				`x.lua:2: unknown tag "@retrun" (want @key, @arg, @return, @error, @flags or @multi)`,
				"x.lua:3: @arg Rate: name must be lower case letters, digits and _ (like retry_after)",
				"x.lua:4: @error badarg: code must be upper case letters, digits and _ (like BADARG)",
				`x.lua:5: @flags: unknown flag "fast" (want no-writes, allow-oom, allow-stale, no-cluster or allow-cross-slot-keys)`,
			},
		},
		{
			name: "duplicates and text after tags",
			src: lua("--- s", "--- @key a", "--- @arg a int", "--- @return r int", "--- @return r int",
				"--- @error E", "--- @error E", "--- more text", "local a = KEYS[1]", "return 1"),
			want: []string{
				"x.lua:3: @arg a: name already declared at line 2",
				"x.lua:5: @return r: name already declared at line 4",
				"x.lua:7: @error E: already declared at line 6",
				"x.lua:8: summary text after the first tag; put the summary before @key, @arg and @return",
			},
		},
		{
			name: "variadic not last",
			src: lua("--- s", "--- @arg ...a int", "--- @arg b int", "--- @return r int",
				"local a = ARGV[1]", "local b = ARGV[2]", "return 1"),
			want: []string{"x.lua:2: @arg ...a: only the last @arg can be variadic"},
		},
		{
			name: "body disagrees with header",
			src: lua("--- s", "--- @key bucket", "--- @arg rate int", "--- @arg burst int", "--- @return r int",
				"local bucket = KEYS[1]", "local rat = ARGV[1]", "local x = ARGV[3]",
				"redis.call('GET', KEYS[1])", "local y = KEYS[2]", "return 1"),
			want: []string{
				`x.lua:4: @arg burst is never read: want "local burst = ...ARGV[2]..."`,
				`x.lua:7: ARGV[1] is bound to local "rat", but @arg 1 is "rate"`,
				"x.lua:8: ARGV[3] is not declared: the header has 2 @arg",
				"x.lua:10: KEYS[2] is not declared: the header has 1 @key",
			},
		},
		{
			name: "variadic never read",
			src: lua("--- s", "--- @key first", "--- @key ...rest", "--- @return r int",
				"local first = KEYS[1]", "return 1"),
			want: []string{"x.lua:3: @key ...rest is never read: the body does not use KEYS beyond KEYS[1]"},
		},
		{
			name: "syntax error",
			src:  lua("--- s", "--- @return r int", "local x = = 1", "return x"),
			want: []string{`x.lua:3: syntax error near "="`},
		},
		{
			name: "file name",
			file: "lua/Token-Bucket.lua",
			src:  lua("--- s", "--- @return r int", "return 1"),
			want: []string{`lua/Token-Bucket.lua:1: file name "Token-Bucket.lua" must be lower case letters, digits and _, ending in .lua (it names the Go API)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "x.lua"
			}
			_, diags := ParseScript(file, []byte(tt.src))
			if diff := cmp.Diff(tt.want, diagStrings(diags)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHeader(t *testing.T) {
	src := lua(
		"#!lua flags=no-writes,allow-stale",
		"--- Peeks at a counter.",
		"---",
		"--- Second paragraph.",
		"--- @key    counter",
		"--- @arg    ...ids   string  ids to look up",
		"--- @return ...hits  int",
		"--- @error  NOT_FOUND  no such counter",
		"--- @flags  no-writes,allow-stale",
		"local counter = KEYS[1]",
		"return {redis.call('GET', counter), #ARGV} -- luagen:ignore shebang",
	)
	s, diags := ParseScript("lua/peek.lua", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	got := *s
	got.Source = nil
	want := Script{
		Name:    "peek",
		File:    "lua/peek.lua",
		Summary: "Peeks at a counter.\n\nSecond paragraph.",
		Keys:    []Field{{Name: "counter", Line: 5}},
		Args:    []Field{{Name: "ids", Type: String, Doc: "ids to look up", Variadic: true, Line: 6}},
		Returns: []Field{{Name: "hits", Type: Int, Variadic: true, Line: 7}},
		Errors:  []ErrorCode{{Code: "NOT_FOUND", Doc: "no such counter", Line: 8}},
		Flags:   []string{"no-writes", "allow-stale"},
		Shebang: true,

		ShebangFlags: []string{"no-writes", "allow-stale"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("script (-want +got):\n%s", diff)
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ in, exported, unexported, errName string }{
		{"token_bucket", "TokenBucket", "tokenBucket", "ErrTokenBucket"},
		{"retry_after", "RetryAfter", "retryAfter", "ErrRetryAfter"},
		{"user_id", "UserID", "userID", "ErrUserID"},
		{"ttl", "TTL", "ttl", "ErrTtl"},
	}
	for _, tt := range tests {
		if got := exported(tt.in); got != tt.exported {
			t.Errorf("exported(%q) = %q, want %q", tt.in, got, tt.exported)
		}
		if got := unexported(tt.in); got != tt.unexported {
			t.Errorf("unexported(%q) = %q, want %q", tt.in, got, tt.unexported)
		}
	}
	codes := map[string]string{
		"BADARG": "ErrBadArg", "BAD_ARG": "ErrBadArg", "TOO_MANY": "ErrTooMany",
		"NOTFOUND": "ErrNotFound", "OVERDRAWN": "ErrOverdrawn", "E2BIG": "ErrE2big",
	}
	for code, want := range codes {
		if got := errName(code); got != want {
			t.Errorf("errName(%q) = %q, want %q", code, got, want)
		}
	}
	keys := map[string]string{"bucket": "bucket", "keys": "keys", "type": "typeKey", "ctx": "ctxKey", "p": "pKey",
		"string": "stringKey", "append": "appendKey", "new_encoder": "newEncoderKey", "scriptMeta": "scriptMetaKey"}
	ns := newNamespace(false)
	for name, want := range keys {
		if got := ns.param(name); got != want {
			t.Errorf("param(%q) = %q, want %q", name, got, want)
		}
	}
}
