package gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lintHeader is a valid header and binding block; body lines start at 7.
const lintHeader = `--- Lint test.
--- @key k
--- @arg a int
--- @return r int
local k = KEYS[1]
local a = ARGV[1]
`

const advice = "Redis's Lua prints it with %.14g (0.1+0.2 gives 0.3, 1e15 gives 1e+15), gopher-lua with Go's shortest form; use string.format('%d', n) for an integer, or a precision such as '%.17g' for a fraction"

func TestLint(t *testing.T) {
	tests := []struct {
		check string
		body  string // one line, at line 7, where the finding must be
		want  string
	}{
		{"global", "x = 1", "assignment to global x: Redis 7 rejects it; declare it local"},
		{"global", "function f() end", "function f is global: Redis 7 rejects it; write local function f"},
		{"goto", "goto done", "goto is Lua 5.2; Redis runs Lua 5.1"},
		{"key-arg", "redis.call('GET', 'prefix:' .. k)", "key of GET does not come from KEYS: pass every key in KEYS so the cluster can route it"},
		{"key-arg", "redis.pcall('hset', a, 'f', 'v')", "key of HSET does not come from KEYS: pass every key in KEYS so the cluster can route it"},
		{"key-arg", "redis.call('OBJECT', 'ENCODING', 'x')", "key of OBJECT does not come from KEYS: pass every key in KEYS so the cluster can route it"},
		{"keys-scan", "redis.call('keys', '*')", "redis.call('keys'): walks the keyspace, which blocks Redis and misses keys on a cluster"},
		{"keys-scan", "redis.pcall('SCAN', '0')", "redis.pcall('SCAN'): walks the keyspace, which blocks Redis and misses keys on a cluster"},
		{"number-string", "local s = tostring(a / 3)", "tostring of a number: " + advice},
		{"number-string", "local s = 'n=' .. math.floor(a)", "number joined with ..: " + advice},
		{"number-string", "local s = tostring(0.5)", "tostring of a number: " + advice},
		{"library", "local t = os.time()", "os is not available in Redis's Lua"},
		{"library", "local f = loadstring('return 1')", "loadstring is not available in Redis's Lua"},
		{"library", "local m = require('x')", "require is not available in Redis's Lua"},
		{"number-string", "local s = string.format('%s', a / 3)", "string.format %s of a number: " + advice},
		{"number-string", "local s = string.format('%d:%5g', a, a / 3)", "string.format %g of a number: " + advice},
		{"number-string", "local s = string.format('%.3f %q', a / 3, a * 2)", "string.format %q of a number: " + advice},
		{"number-arg", "redis.call('SET', k, a / 3)", "argument 3 of redis.call is a computed number: Redis formats it itself (7.0 sends 0.1 as 0.10000000000000001, 7.2.0-7.2.4 send 200000000 as 2e+8); pass string.format('%d', n)"},
		{"number-arg", "redis.pcall('EXPIRE', k, math.ceil(a))", "argument 3 of redis.pcall is a computed number: Redis formats it itself (7.0 sends 0.1 as 0.10000000000000001, 7.2.0-7.2.4 send 200000000 as 2e+8); pass string.format('%d', n)"},
		{"undefined", "local r = retrun_value", `retrun_value is not defined: Redis raises "Script attempted to access nonexistent global variable"; declare it local before this line, or fix the name`},
		{"undefined", "local function f() return later end", `later is not defined: Redis raises "Script attempted to access nonexistent global variable"; declare it local before this line, or fix the name`},
		{"error-code", "if a then return redis.error_reply('BAD_INPUT ' .. a) end", `error reply BAD_INPUT is not declared: add "--- @error BAD_INPUT <when>" so Go callers get ErrBadInput and other stacks read the code`},
		{"error-code", "if a then return redis.error_reply(string.format('OVER %d', a)) end", `error reply OVER is not declared: add "--- @error OVER <when>" so Go callers get ErrOver and other stacks read the code`},
		{"multi-assign", "local b = 2 a, b = b, a", "value 2 of this assignment reads a, which it assigns first: gopher-lua (miniredis) sees the new a, Redis the old; split the statement"},
		{"multi-assign", "local b = 2 b, a = 0, b + 1", "value 2 of this assignment reads b, which it assigns first: gopher-lua (miniredis) sees the new b, Redis the old; split the statement"},
	}
	for _, tt := range tests {
		t.Run(tt.check+"/"+tt.body, func(t *testing.T) {
			src := lintHeader + tt.body + "\nreturn 1\n"
			if tt.check == "goto" {
				src = lintHeader + tt.body + "\n::done::\nreturn 1\n"
			}
			_, diags := ParseScript("x.lua", []byte(src))
			got := diagStrings(diags)
			sev := ""
			if severities[tt.check] == Warning {
				sev = "warning: "
			}
			want := []string{"x.lua:7: " + sev + tt.want + " (" + tt.check + ")"}
			if tt.check == "goto" {
				want = append(want, "x.lua:8: label ::done:: is Lua 5.2; Redis runs Lua 5.1 (goto)")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}

			// The same line with an ignore comment is clean.
			silenced := strings.Replace(src, tt.body, tt.body+" -- luagen:ignore "+tt.check, 1)
			silenced = strings.Replace(silenced, "::done::", "::done:: -- luagen:ignore goto", 1)
			if _, diags := ParseScript("x.lua", []byte(silenced)); len(diags) > 0 {
				t.Errorf("with luagen:ignore %s: %v", tt.check, diags)
			}
			// Ignoring another check does not silence this one.
			other := strings.Replace(src, tt.body, tt.body+" -- luagen:ignore shebang", 1)
			if _, diags := ParseScript("x.lua", []byte(other)); len(diags) == 0 {
				t.Errorf("luagen:ignore shebang silenced %s", tt.check)
			}
		})
	}
}

// Every #! line is a finding (miniredis and gopher-lua cannot parse it),
// and the message says what the line means for Redis 7.
func TestLintShebang(t *testing.T) {
	const tail = "miniredis, gopher-lua and Redis before 7.0 cannot parse it (%s); drop it, or keep it with -- luagen:ignore shebang if you run only on Redis 7 or later (shebang)"
	write := "#!lua\n" + lintHeader + "return 1\n"
	_, diags := ParseScript("x.lua", []byte(write))
	want := []string{"x.lua:1: #! line: " + fmt.Sprintf(tail, "and without flags=no-writes Redis 7 treats the script as one that writes; if it only reads, declare @flags no-writes")}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	readOnly := "#!lua flags=no-writes\n--- Lint test.\n--- @flags no-writes\n--- @return r int\nreturn 1\n"
	_, diags = ParseScript("x.lua", []byte(readOnly))
	want = []string{"x.lua:1: #! line: " + fmt.Sprintf(tail, "luagen already runs a @flags no-writes script with EVALSHA_RO")}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Redis rejects a comment on the #! line, so the ignore may sit anywhere.
	ignored := "#!lua\n" + lintHeader + "return 1 -- luagen:ignore shebang\n"
	if _, diags := ParseScript("x.lua", []byte(ignored)); len(diags) > 0 {
		t.Errorf("ignored shebang: %v", diags)
	}
}

// Code that keeps the rules must not be flagged: locals, keys from KEYS
// (directly, through a local, or by iterating KEYS), integer formatting,
// string concatenation, Redis's own libraries.
func TestLintClean(t *testing.T) {
	src := lintHeader + `local function helper(x) return x end
local t = {}
function t.method() end
local n = 0
n = n + 1
for _, key in ipairs(KEYS) do redis.call('DEL', key) end
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
local ks = KEYS
for i = 1, #ks do redis.call('DEL', ks[i]) end
redis.call('SET', k, string.format('%d', a))
redis.call('SET', k, string.format('%.17g %.3f %e %f %5.2g %-8.1G %i', a / 3, a / 3, a / 3, a / 3, a / 3, a / 3, a))
redis.call('TIME')
redis.call('PUBLISH', 'chan', 'msg')
local s = 'a' .. 'b' .. tostring(n) .. string.sub('xyz', 1, 2) .. 5
local j = cjson.encode({bit.band(1, 3), struct and 1, math.max(1, 2)})
local co = coroutine
return 1
`
	if _, diags := ParseScript("x.lua", []byte(src)); len(diags) > 0 {
		t.Errorf("clean script flagged:\n%v", diags)
	}
}

// A no-writes script may not call a write command; a script that writes
// need not say so.
func TestLintNoWrites(t *testing.T) {
	src := lua("--- Reads.", "--- @key k", "--- @return r int", "--- @flags no-writes",
		"local k = KEYS[1]", "redis.call('get', k)", "redis.call('set', k, '1')", "return redis.pcall('HINCRBY', k, 'f', '1')")
	_, diags := ParseScript("x.lua", []byte(src))
	want := []string{
		"x.lua:7: redis.call('set') writes, but the header says @flags no-writes: EVALSHA_RO and replicas refuse it; drop no-writes or the write (no-writes)",
		"x.lua:8: redis.pcall('HINCRBY') writes, but the header says @flags no-writes: EVALSHA_RO and replicas refuse it; drop no-writes or the write (no-writes)",
	}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	writes := strings.Replace(src, "--- @flags no-writes\n", "", 1)
	if _, diags := ParseScript("x.lua", []byte(writes)); len(diags) > 0 {
		t.Errorf("a script without no-writes: %v", diags)
	}
}

// luagen:ignore counts only in a comment: inside a string it is text.
func TestIgnoreOnlyInComments(t *testing.T) {
	tests := []struct {
		line   string
		silent bool
	}{
		{`x = 1 -- luagen:ignore global`, true},
		{`x = 1 --[[ luagen:ignore global ]]`, true},
		{`x = "-- luagen:ignore global"`, false},
		{`x = '-- luagen:ignore global'`, false},
		{`x = [[-- luagen:ignore global]]`, false},
		{`x = [==[ ]] -- luagen:ignore global ]==]`, false},
		{`x = "\" -- luagen:ignore global"`, false},
		{`x = 1 -- see luagen:ignore global`, false},
	}
	for _, tt := range tests {
		_, diags := ParseScript("x.lua", []byte(lintHeader+tt.line+"\nreturn 1\n"))
		if got := len(diags) == 0; got != tt.silent {
			t.Errorf("%s: silenced = %v, want %v (%v)", tt.line, got, tt.silent, diags)
		}
	}
	_, diags := ParseScript("x.lua", []byte(lintHeader+"local y = 1 -- luagen:ignore golbal\nreturn 1\n"))
	want := []string{"x.lua:7: luagen:ignore golbal: no such check; want one of " + checkList()}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLuaComments(t *testing.T) {
	src := "#!lua\nlocal a = 'x' -- one\nlocal b = [[\n--not\n]] --[==[two\nlines]==] -- three\n--[[four]]"
	want := []comment{{2, " one"}, {5, "two\nlines"}, {6, " three"}, {7, "four"}}
	if diff := cmp.Diff(want, luaComments([]byte(src)), cmp.AllowUnexported(comment{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Lines end as Lua ends them (\n, \r, \r\n), so a finding and its ignore
// comment agree on the line in files saved with any line ending.
func TestLineEndings(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		body := strings.ReplaceAll(lintHeader+"x = 1\ny = 2 -- luagen:ignore global\nreturn 1\n", "\n", nl)
		_, diags := ParseScript("x.lua", []byte(body))
		want := []string{"x.lua:7: assignment to global x: Redis 7 rejects it; declare it local (global)"}
		if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
			t.Errorf("%q: (-want +got):\n%s", nl, diff)
		}
	}
}

// A warning never stops Generate: the code is made and the finding comes
// back in Output.Warnings. Strict makes it an error, and then nothing is
// made; an error elsewhere reports the warnings with it.
func TestGenerateWarnings(t *testing.T) {
	warned := lintHeader + "if a == '' then return redis.error_reply('NOPE ' .. a) end\nreturn tostring(a / 3)\n"
	in := []Input{{Path: "x.lua", Src: []byte(warned)}}
	out, err := Generate(in, Options{Package: "p"})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := []string{
		`x.lua:7: warning: error reply NOPE is not declared: add "--- @error NOPE <when>" so Go callers get ErrNope and other stacks read the code (error-code)`,
		"x.lua:8: warning: tostring of a number: " + advice + " (number-string)",
	}
	if diff := cmp.Diff(want, diagStrings(out.Warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(out.Files) == 0 {
		t.Errorf("no files generated")
	}

	_, err = Generate(in, Options{Package: "p", Strict: true})
	ds, ok := err.(Diagnostics)
	if !ok {
		t.Fatalf("strict: err = %v, want Diagnostics", err)
	}
	for i := range want {
		want[i] = strings.Replace(want[i], "warning: ", "", 1)
	}
	if diff := cmp.Diff(want, diagStrings(ds)); diff != "" {
		t.Errorf("strict (-want +got):\n%s", diff)
	}

	broken := []Input{in[0], {Path: "y.lua", Src: []byte(lintHeader + "x = 1\nreturn 1\n")}}
	_, err = Generate(broken, Options{Package: "p"})
	ds, _ = err.(Diagnostics)
	if got := diagStrings(ds); len(got) != 3 || !strings.HasPrefix(got[0], "x.lua:7: warning: ") || !strings.HasPrefix(got[2], "y.lua:7: assignment to global x") {
		t.Errorf("an error with warnings: got %q", got)
	}
}
