package gen

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// locals declares n locals at the current level, one per line.
func locals(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "local %s%d = %d\n", prefix, i, i)
	}
	return b.String()
}

// chunkCase is a script body, and whether Redis runs it as a script (EVAL)
// and as the body of a Functions callback (FUNCTION LOAD, then FCALL).
type chunkCase struct {
	name          string
	body          string
	evalOK, libOK bool
}

// chunkCases sit on both sides of Lua's limit of 200 locals per function,
// counted as Lua 5.1 counts them, and of ..., which a callback cannot use.
func chunkCases() []chunkCase {
	return []chunkCase{
		{"198 locals", locals("v", 198) + "return 1\n", true, true},
		{"199 locals", locals("v", 199) + "return 1\n", true, false},
		{"200 locals", locals("v", 200) + "return 1\n", true, false},
		{"201 locals", locals("v", 201) + "return 1\n", false, false},
		{"200 locals in one statement", "local " + strings.TrimSuffix(strings.Repeat("a, ", 199), ", ") + ", last = 1\nreturn 1\n", true, false},
		{"195 and a numeric for", locals("v", 195) + "for i = 1, 1 do local x = i end\nreturn 1\n", true, false},
		{"196 and a numeric for", locals("v", 196) + "for i = 1, 1 do local x = i end\nreturn 1\n", false, false},
		{"195 and a generic for", locals("v", 195) + "for k, v in pairs({}) do end\nreturn 1\n", true, false},
		{"196 and a generic for", locals("v", 196) + "for k, v in pairs({}) do end\nreturn 1\n", false, false},
		{"locals end with their block", "do\n" + locals("v", 150) + "end\n" + locals("w", 150) + "return 1\n", true, true},
		{"a function with 2 parameters and 198 locals", "local function f(a, b)\n" + locals("v", 198) + "return 1\nend\nreturn f()\n", true, true},
		{"a function with 2 parameters and 199 locals", "local function f(a, b)\n" + locals("v", 199) + "return 1\nend\nreturn f()\n", false, false},
		// Lua 5.1 gives a vararg function an implicit local arg.
		{"a vararg function with 199 locals", "local function f(...)\n" + locals("v", 199) + "return 1\nend\nreturn f()\n", true, true},
		{"a vararg function with 200 locals", "local function f(...)\n" + locals("v", 200) + "return 1\nend\nreturn f()\n", false, false},
		{"a method with 199 locals", "local t = {}\nfunction t:m()\n" + locals("v", 199) + "return 1\nend\nreturn t:m()\n", true, true},
		{"a method with 200 locals", "local t = {}\nfunction t:m()\n" + locals("v", 200) + "return 1\nend\nreturn t:m()\n", false, false},
		{"... at chunk level", "return select('#', ...)\n", true, false},
		{"... in a vararg function", "local function f(...) return select('#', ...) end\nreturn f(1, 2)\n", true, true},
		{"... in a function without it", "local function f() return select('#', ...) end\nreturn f()\n", false, false},
		{"redis.replicate_commands", "redis.replicate_commands()\nreturn 1\n", true, false},
	}
}

func chunkScript(body string) []byte {
	return []byte("--- Tries a limit of Lua.\n--- @return r int\n" + body)
}

// luagen refuses what Redis cannot run, as a script and in a library, and
// accepts the rest; on a real server Redis itself confirms each verdict.
func TestChunkLimits(t *testing.T) {
	var c *redis.Client
	if addr := redisserver.Maybe(t); addr != "" {
		c = redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
	}
	ctx := context.Background()
	for _, tt := range chunkCases() {
		t.Run(tt.name, func(t *testing.T) {
			src := chunkScript(tt.body)
			ins := []Input{{Path: "limit.lua", Src: src}}
			_, err := Generate(ins, Options{Package: "x"})
			if gotOK := err == nil; gotOK != tt.evalOK {
				t.Errorf("as a script: luagen accepts = %v, want %v (%v)", gotOK, tt.evalOK, err)
			}
			_, err = Generate(ins, Options{Package: "x", Functions: "lim"})
			if gotOK := err == nil; gotOK != tt.libOK {
				t.Errorf("in a library: luagen accepts = %v, want %v (%v)", gotOK, tt.libOK, err)
			}
			if c == nil {
				return
			}
			err = c.Eval(ctx, string(src), nil).Err()
			if redisOK := err == nil; redisOK != tt.evalOK {
				t.Errorf("EVAL: Redis runs it = %v, the table says %v (%v)", redisOK, tt.evalOK, err)
			}
			s, _ := ParseScript("limit.lua", src)
			lib := libraryText(libraryParts("lim", []*Script{s}))
			err = c.FunctionLoadReplace(ctx, string(lib)).Err()
			if err == nil {
				err = c.FCall(ctx, "lim_limit", nil).Err()
			}
			if redisOK := err == nil; redisOK != tt.libOK {
				t.Errorf("FUNCTION LOAD and FCALL: Redis runs it = %v, the table says %v (%v)", redisOK, tt.libOK, err)
			}
		})
	}
}

// What keeps a script out of a library is said with file:line, and only
// when a library is asked for; so are the library's own names.
func TestLibraryRefusals(t *testing.T) {
	one := "--- s\n--- @return r int\nreturn 1\n"
	tests := []struct {
		name    string
		scripts map[string]string
		want    []string
	}{
		{
			name:    "vararg",
			scripts: map[string]string{"v.lua": "--- s\n--- @return r int\nlocal n = select('#', ...)\nreturn n\n"},
			want:    []string{"v.lua:3: ... at the script's chunk level: in a Functions library the chunk is the body of a callback, which is no vararg function, so Redis cannot compile it; read ARGV instead (under EVAL ... is empty anyway)"},
		},
		{
			name:    "debugger and replication",
			scripts: map[string]string{"d.lua": "--- s\n--- @return r int\nredis.replicate_commands()\nif redis.breakpoint then\n  redis.debug('x')\nend\nreturn 1\n"},
			want: []string{
				"d.lua:3: redis.replicate_commands does not exist in a Functions library: Redis 5 and later replicate a script's effects anyway; drop the call",
				"d.lua:4: redis.breakpoint does not exist in a Functions library: it serves only the script debugger (redis-cli --ldb); drop the call",
				"d.lua:5: redis.debug does not exist in a Functions library: it serves only the script debugger (redis-cli --ldb); drop the call",
			},
		},
		{
			name:    "locals",
			scripts: map[string]string{"l.lua": "--- s\n--- @return r int\n" + locals("v", 199) + "return 1\n"},
			want:    []string{"l.lua:201: 199 local variables active at once in the script's chunk: in a Functions library the chunk is the body of a callback whose parameters KEYS and ARGV count too, which leaves 198 of Lua's 200; move some into a do ... end block or a table"},
		},
		{
			name:    "names of the Functions file",
			scripts: map[string]string{"load_functions.lua": one, "with_functions.lua": one, "functions_client.lua": one},
			want: []string{
				"functions_client.lua:1: Go name FunctionsClient is already used by luagen's Functions file; rename the script",
				"load_functions.lua:1: Go name LoadFunctions is already used by luagen's Functions file; rename the script",
				"with_functions.lua:1: Go name WithFunctions is already used by luagen's Functions file; rename the script",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ins []Input
			for name, src := range tt.scripts {
				ins = append(ins, Input{Path: name, Src: []byte(src)})
			}
			if _, err := Generate(ins, Options{Package: "x"}); err != nil {
				t.Errorf("without a library: %v", err)
			}
			_, err := Generate(ins, Options{Package: "x", Functions: "lib"})
			ds, ok := err.(Diagnostics)
			if !ok {
				t.Fatalf("err = %v, want Diagnostics", err)
			}
			if diff := cmp.Diff(tt.want, diagStrings(ds)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, name := range []string{"", "a-b", "a b", "ünï", "a.b"} {
		if _, err := Generate([]Input{{Path: "a.lua", Src: []byte(one)}}, Options{Package: "x", Functions: name}); err == nil || !strings.Contains(err.Error(), "Redis allows only letters, digits and _") {
			if name != "" {
				t.Errorf("library %q: err = %v", name, err)
			}
		}
	}
}

// The library holds each script byte for byte; a #! line becomes a comment,
// and a last line without a newline still ends before the callback does.
func TestLibraryText(t *testing.T) {
	shebang := "#!lua flags=no-writes\n--- Reads.\n--- @key k\n--- @return v string\n--- @flags no-writes\n-- luagen:ignore shebang\nlocal k = KEYS[1]\nreturn redis.call('GET', k) or ''"
	plain := "--- Counts.\n--- @key k\n--- @return n int\nlocal k = KEYS[1]\nreturn redis.call('INCR', k) -- no newline"
	out, err := Generate([]Input{{Path: "b.lua", Src: []byte(shebang)}, {Path: "a.lua", Src: []byte(plain)}}, Options{Package: "x", Functions: "lib"})
	if err != nil {
		t.Fatal(err)
	}
	var lib string
	for _, f := range out.Files {
		if f.Name == "lib.functions.lua" {
			lib = string(f.Content)
		}
	}
	for _, want := range []string{
		"#!lua name=lib\n" + LibraryMarker + "\n",
		"redis.register_function{\n  function_name = 'lib_a',\n  callback = function(KEYS, ARGV)\n" + plain + "\nend,\n}\n",
		"redis.register_function{\n  function_name = 'lib_b',\n  flags = {'no-writes'},\n  callback = function(KEYS, ARGV)\n--" + shebang + "\nend,\n}\n",
	} {
		if !strings.Contains(lib, want) {
			t.Errorf("library lacks\n%s\n---- library:\n%s", want, lib)
		}
	}
}

// Redis refuses a library without functions, so luagen does too.
func TestLibraryWithoutScripts(t *testing.T) {
	if _, err := Generate(nil, Options{Package: "x", Functions: "lib"}); err == nil || !strings.Contains(err.Error(), "needs a script") {
		t.Errorf("err = %v", err)
	}
}
