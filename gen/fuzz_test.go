package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets hold luagen to its promise for any input: no panic, and
// every problem a "file:line: message" whose line is in the file. Their
// seeds run in plain go test; `make fuzz FUZZ_PKGS=./gen` runs each for a while
// (CI: `make fuzz-ci`, a few seconds each).

// checkDiags fails when a diagnostic is not file:line: message for src.
func checkDiags(t *testing.T, src string, ds Diagnostics) {
	t.Helper()
	lines := len(luaLines(src))
	for _, d := range ds {
		if d.File != "x.lua" || d.Line < 1 || d.Line > lines || strings.TrimSpace(d.Msg) == "" {
			t.Fatalf("bad diagnostic %q (file has %d lines)", d.String(), lines)
		}
		if strings.Contains(d.Msg, "\n") {
			t.Fatalf("diagnostic spans lines: %q", d.String())
		}
	}
}

func addScriptSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/scripts/*.lua")
	more, _ := filepath.Glob("../lua/*.lua")
	for _, name := range append(files, more...) {
		if src, err := os.ReadFile(name); err == nil {
			f.Add(string(src))
		}
	}
	for _, in := range hostileCorpus()[:2] {
		f.Add(string(in.Src))
	}
}

// FuzzHeader throws arbitrary text, and the repository's scripts, at the
// header parser (and, behind it, the binding check and the lint).
func FuzzHeader(f *testing.F) {
	addScriptSeeds(f)
	for _, s := range []string{
		"", "---", "--- s\n--- @return", "#!lua flags=no-writes\n--- s\n--- @flags no-writes\n--- @return r int\nreturn 1",
		"--- s\n--- @arg a enum(x|y\n--- @return r int[1..]\nlocal a = ARGV[1]\nreturn 1",
		"--- s\n--- @arg a int[..2^63]\n--- @arg b unix_us[-1..1e18]\n--- @return ...r float[0.5..]\n",
		"--- s\n--- @key ...k\n--- @arg ...a ms\n--- @return ...r enum(a|b)\nreturn KEYS",
		"--- s\r\n--- @return r int\r\nreturn 1\r\n", "--- \xff\n--- @return r int\nreturn 1",
		"--- s\n--- @key ...k[1..16] (a, b)\n--- @arg ...l[..3] (x int[1..], y ms[0..]|never=-1, z string/^(a|b){1,2}$/)\n--- @return ...r (p int, q ms[0..]|never=-1)\nreturn #KEYS + #ARGV",
		"--- s\n--- @arg a unix_us[1..2^52]|server_clock=0|x=-1\n--- @arg b string/^[\\]-]$/\n--- @return ...r[1..] string/^.$/\nlocal a = ARGV[1]\nlocal b = ARGV[2]\nreturn {a}",
		"--- s\n--- @arg ...l (x int, y (z int))\n--- @return r int", "--- s\n--- @arg ...l[ (x int, y int\n--- @return r int",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, ds := ParseScript("x.lua", []byte(src))
		checkDiags(t, src, ds)
	})
}

// FuzzLint keeps a valid header and fuzzes the body the lint walks.
func FuzzLint(f *testing.F) {
	for _, s := range []string{
		"x = 1", "goto done\n::done::", "redis.call('GET', 'p:' .. k)", "redis.call('keys', '*')",
		"local s = tostring(a / 3)", "local s = string.format('%s %d %5.2g %%', a / 3, 1, 2)",
		"redis.call('SET', k, a / 3)", "local r = retrun_value", "return redis.error_reply('BAD ' .. a)",
		"local b = 2 a, b = b, a", "local t = {[1] = function(...) return arg end}",
		"for _, key in ipairs(KEYS) do redis.call('DEL', key) end", "repeat local z = 1 until z",
		"local s = [==[ -- luagen:ignore global ]==] x = 1 -- luagen:ignore global", "--[[ unterminated",
		"local f = function(self) return self:m() end", "while true do break end",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		src := lintHeader + body + "\nreturn 1\n"
		_, ds := ParseScript("x.lua", []byte(src))
		checkDiags(t, src, ds)
	})
}

// FuzzGenerate: whatever a script says, Generate either refuses it with
// diagnostics or renders Go that parses and, with a Functions library, a
// library that parses (Generate checks both); never any other error.
func FuzzGenerate(f *testing.F) {
	addScriptSeeds(f)
	f.Add("--- s\n--- @return r int\nreturn select('#', ...)")
	f.Add("#!lua\n--- s\n--- @return r int\n-- luagen:ignore shebang\nreturn 1 -- ]]")
	f.Fuzz(func(t *testing.T, src string) {
		for _, lib := range []string{"", "lib"} {
			out, err := Generate([]Input{{Path: "x.lua", Src: []byte(src)}}, Options{Package: "x", Manifest: true, Functions: lib})
			if ds, ok := err.(Diagnostics); ok {
				checkDiags(t, src, ds)
				continue
			}
			if err != nil {
				t.Fatalf("not a diagnostic: %v", err)
			}
			want := 2
			if lib != "" {
				want = 4
			}
			if len(out.Files) != want || len(out.Manifest) == 0 {
				t.Fatalf("output: %d files, %d bytes of manifest", len(out.Files), len(out.Manifest))
			}
		}
	})
}
