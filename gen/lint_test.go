package gen

import (
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
		{"number-string", "local s = tostring(a / 3)", "tostring of a number: Redis's Lua prints it with %.14g (1e15 becomes 1e+15); use string.format('%d', n)"},
		{"number-string", "local s = 'n=' .. math.floor(a)", "number joined with ..: Redis's Lua prints it with %.14g (1e15 becomes 1e+15); use string.format('%d', n)"},
		{"number-string", "local s = tostring(0.5)", "tostring of a number: Redis's Lua prints it with %.14g (1e15 becomes 1e+15); use string.format('%d', n)"},
		{"library", "local t = os.time()", "os is not available in Redis's Lua"},
		{"library", "local f = loadstring('return 1')", "loadstring is not available in Redis's Lua"},
		{"library", "local m = require('x')", "require is not available in Redis's Lua"},
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
			want := []string{"x.lua:7: " + tt.want + " (" + tt.check + ")"}
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

func TestLintShebang(t *testing.T) {
	write := "#!lua\n" + lintHeader + "return 1\n"
	_, diags := ParseScript("x.lua", []byte(write))
	want := []string{"x.lua:1: #! line on a script that writes: it changes Redis's defaults and miniredis cannot parse it; declare @flags no-writes or drop it (shebang)"}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	readOnly := "#!lua flags=no-writes\n--- Lint test.\n--- @flags no-writes\n--- @return r int\nreturn 1\n"
	if _, diags := ParseScript("x.lua", []byte(readOnly)); len(diags) > 0 {
		t.Errorf("no-writes script with #!: %v", diags)
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
redis.call('SET', k, string.format('%d', a))
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
