package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// snake turns newEncoder into new_encoder, the header name that camel-cases
// back to it.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hostileNames are header names that turn into Go names the generated code
// already uses, or that Go reserves: Go keywords, every predeclared
// identifier, the imports and locals of the generated functions, every
// helper of the shared file, and the per-script helpers of s4.lua. Lua
// keywords are left out: they cannot name a local, and the header refuses
// them (TestGrammarMessages).
func hostileNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if nameRE.MatchString(n) && !luaKeywords[n] && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, k := range []string{"case", "chan", "const", "continue", "default", "defer", "fallthrough", "func", "go",
		"import", "interface", "map", "package", "range", "select", "struct", "switch", "type", "var"} {
		add(k)
	}
	for _, n := range types.Universe.Names() {
		add(n)
	}
	for _, n := range append(append(append(append([]string{}, imports...), localNames...), sharedNames...), functionNames...) {
		add(snake(n))
	}
	for _, suffix := range perScriptSuffixes {
		add("s4_" + strings.ToLower(suffix))
	}
	sort.Strings(out)
	return out
}

// hostileCorpus is scripts whose names, keys, arguments and replies are
// all hostile names; luagen must turn them into code that compiles, vets
// and runs.
func hostileCorpus() []Input {
	names := hostileNames()
	var keys, args strings.Builder
	keys.WriteString("--- Returns its keys, each bound to a local with a hostile name.\n")
	args.WriteString("--- Returns its arguments, each bound to a local with a hostile name.\n")
	for _, n := range names {
		fmt.Fprintf(&keys, "--- @key %s\n", n)
		fmt.Fprintf(&args, "--- @arg %s string\n", n)
	}
	keys.WriteString("--- @return ...keys string\n")
	for _, n := range names {
		fmt.Fprintf(&args, "--- @return %s string\n", n)
	}
	for i, n := range names {
		fmt.Fprintf(&keys, "local %s = KEYS[%d]\n", n, i+1)
		fmt.Fprintf(&args, "local %s = ARGV[%d]\n", n, i+1)
	}
	keys.WriteString("return KEYS\n")
	args.WriteString("return ARGV\n")
	variadic := lua("--- Returns its keys and arguments; the last of each is variadic.",
		"--- @key string", "--- @key ...append", "--- @arg new_encoder int", "--- @arg ...s4_call ms",
		"--- @return ...rest string", "local string = KEYS[1]", "local new_encoder = ARGV[1]",
		"local out = {string}", "for i = 2, #KEYS do out[#out + 1] = KEYS[i] end",
		"for i = 1, #ARGV do out[#out + 1] = ARGV[i] end", "return out")
	// Records whose fields, keys and patterns spell the generated code's
	// locals and imports.
	records := lua("--- Echoes records with hostile names.",
		"--- @key    string", "--- @key    ...r[1..] (v, e)", "--- @arg    regexp string/^[a-z]*$/",
		"--- @arg    ...limits (p int, d ms[0..]|never=-1, regexp string/^(x|y)$/)",
		"--- @return ...per (v int, e ms[0..]|never=-1)",
		"local string = KEYS[1]", "local regexp = ARGV[1]", "return {#KEYS, #ARGV > 0 and -1 or 0}")
	ins := []Input{
		{Path: "hostile/records.lua", Src: []byte(records)},
		{Path: "hostile/s4.lua", Src: []byte(keys.String())},
		{Path: "hostile/args.lua", Src: []byte(args.String())},
		{Path: "hostile/variadic.lua", Src: []byte(variadic)},
	}
	// Script names that spell helpers and predeclared names.
	for _, n := range []string{"info", "call", "run", "queue", "result", "rest", "decoder", "encoder", "describe",
		"meta", "script", "script_meta", "string", "append", "len", "error", "type", "func", "go", "map", "int64",
		"context", "redis", "time", "errors", "fmt", "any", "new", "s4_call", "is_pipeline", "unknown_command"} {
		ins = append(ins, Input{Path: "hostile/" + n + ".lua", Src: []byte("--- Returns one.\n--- @return one int\nreturn 1\n")})
	}
	return ins
}

const hostileTest = `package hostile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// The keys and arguments arrive in header order despite their names.
func TestHostile(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx := context.Background()
	%s
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, %d)
	for i := range want {
		want[i] = fmt.Sprint("k", i)
	}
	if diff := cmp.Diff(want, got.Keys); diff != "" {
		t.Errorf("keys (-want +got):\n%%s", diff)
	}
	if r, err := Info(ctx, c); err != nil || r.One != 1 {
		t.Errorf("Info = %%+v, %%v", r, err)
	}
	if r, err := Args(ctx, c, ArgsParams{String: "s", Append: "a"}); err != nil || r.String != "s" || r.Append != "a" {
		t.Errorf("Args = %%+v, %%v", r, err)
	}
	v, err := Variadic(ctx, c, "a", []string{"b", "c"}, VariadicParams{NewEncoder: 1, S4Call: []time.Duration{time.Second}})
	if diff := cmp.Diff([]string{"a", "b", "c", "1", "1000"}, v.Rest); err != nil || diff != "" {
		t.Errorf("Variadic: %%v (-want +got):\n%%s", err, diff)
	}
}
`

func TestHostileNamesCompileAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	// With a Functions library, whose Go file has names of its own.
	out, err := Generate(hostileCorpus(), Options{Package: "hostile", Functions: "hostile"})
	if err != nil {
		t.Fatalf("the hostile corpus was refused:\n%v", err)
	}
	files := map[string][]byte{}
	for _, f := range out.Files {
		files[f.Name] = f.Content
	}
	n := len(hostileNames())
	var keys []string
	for i := 0; i < n; i++ {
		keys = append(keys, fmt.Sprintf(`"k%d"`, i))
	}
	call := fmt.Sprintf("got, err := S4(ctx, c, %s)", strings.Join(keys, ", "))
	files["hostile_test.go"] = []byte(fmt.Sprintf(hostileTest, call, n))
	dir := goModule(t, "example.com/hostile", files)
	goCmd(t, dir, nil, "vet", "./...")
	goCmd(t, dir, nil, "test", "-count=1", "./...")
}

// Names that still spell the same Go name are refused with file:line and
// what to change.
func TestHostileRefusals(t *testing.T) {
	one := "--- s\n--- @return r int\nreturn 1\n"
	tests := []struct {
		name    string
		scripts map[string]string
		want    []string
	}{
		{
			name:    "script and another script's type",
			scripts: map[string]string{"a.lua": one, "a_result.lua": one},
			want:    []string{"a_result.lua:1: Go name AResult is already used by a.lua; rename the script"},
		},
		{
			name:    "scripts that camel-case alike",
			scripts: map[string]string{"a_b.lua": one, "a__b.lua": one},
			want:    []string{"a_b.lua:1: Go name AB is already used by a__b.lua; rename the script"},
		},
		{
			name: "scripts named like the shared file's names",
			scripts: map[string]string{"batch.lua": one, "new_batch.lua": one, "exec.lua": one, "pending.lua": one,
				"err_pipeline.lua": one, "arg_error.lua": one, "load_all.lua": one},
			want: []string{
				"arg_error.lua:1: Go name ArgError is already used by luagen's shared file; rename the script",
				"batch.lua:1: Go name Batch is already used by luagen's shared file; rename the script",
				"err_pipeline.lua:1: Go name ErrPipeline is already used by luagen's shared file; rename the script",
				"exec.lua:1: Go name Exec is already used by luagen's shared file; rename the script",
				"load_all.lua:1: Go name LoadAll is already used by luagen's shared file; rename the script",
				"new_batch.lua:1: Go name NewBatch is already used by luagen's shared file; rename the script",
				"pending.lua:1: Go name Pending is already used by luagen's shared file; rename the script",
			},
		},
		{
			name: "keys that camel-case alike",
			scripts: map[string]string{"k.lua": lua("--- s", "--- @key a_1", "--- @key a1", "--- @key string",
				"--- @key string_key", "--- @return r int", "local a_1 = KEYS[1]", "local a1 = KEYS[2]",
				"local string = KEYS[3]", "local string_key = KEYS[4]", "return 1")},
			want: []string{
				"k.lua:3: @key a1: its Go parameter a1 is already used by @key a_1 (line 2); rename one of them",
				"k.lua:5: @key string_key: its Go parameter stringKey is already used by @key string (line 4); rename one of them",
			},
		},
		{
			name: "arguments and returns that camel-case alike",
			scripts: map[string]string{"f.lua": lua("--- s", "--- @arg limit_2 int", "--- @arg limit2 int",
				"--- @return x_y int", "--- @return x__y int", "local limit_2 = ARGV[1]", "local limit2 = ARGV[2]", "return {1, 2}")},
			want: []string{
				"f.lua:3: @arg limit2: its Go field Limit2 is already used by @arg limit_2 (line 2); rename one of them",
				"f.lua:5: @return x__y: its Go field XY is already used by @return x_y (line 4); rename one of them",
			},
		},
		{
			name: "error codes that spell one sentinel",
			scripts: map[string]string{
				"a.lua": lua("--- s", "--- @return r int", "--- @error BADARG", "return 1"),
				"b.lua": lua("--- s", "--- @return r int", "--- @error BAD_ARG", "--- @error PIPELINE", "return 1"),
			},
			want: []string{
				"b.lua:3: @error BAD_ARG: its sentinel ErrBadArg is already used by @error BADARG (a.lua:3); spell the code the same way in every script",
				"b.lua:4: @error PIPELINE: its sentinel ErrPipeline is already used by luagen's shared file; rename the code",
			},
		},
		{
			name: "enum words and types",
			scripts: map[string]string{"a.lua": lua("--- s", "--- @arg params enum(x|y)", "--- @arg mode enum(a-b|a_b)",
				"--- @return mode enum(a-b|c)", "local params = ARGV[1]", "local mode = ARGV[2]", "return 'c'")},
			want: []string{
				"a.lua:2: enum params: Go name AParams is already used by a.lua; rename the field",
				"a.lua:3: enum word a_b: Go name AModeAB is already used by enum word a-b of mode; rename the word or the field",
				"a.lua:4: mode: enum type AMode is declared at line 3 with other words; give the @arg and the @return the same words or different names",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ins []Input
			for name, src := range tt.scripts {
				ins = append(ins, Input{Path: name, Src: []byte(src)})
			}
			_, err := Generate(ins, Options{Package: "x"})
			ds, ok := err.(Diagnostics)
			if !ok {
				t.Fatalf("err = %v, want Diagnostics", err)
			}
			if diff := cmp.Diff(tt.want, diagStrings(ds)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// sharedNames and functionNames are read from gen/runtime, so they hold
// every name the shared file and the Functions file can declare: each name
// the golden output (which uses every type) declares must be among them,
// or the collision checks above would miss it.
func TestSharedNamesComplete(t *testing.T) {
	out, err := Generate(goldenInputs(t), Options{Package: "golden", Functions: goldenFunctions})
	if err != nil {
		t.Fatal(err)
	}
	for file, listed := range map[string][]string{SharedFile: sharedNames, FunctionsGoFile: functionNames} {
		var src []byte
		for _, f := range out.Files {
			if f.Name == file {
				src = f.Content
			}
		}
		known := map[string]bool{}
		for _, n := range listed {
			known[n] = true
		}
		for _, n := range declaredNames(t, file, src) {
			if !known[n] {
				t.Errorf("%s declares %s, which the namespace does not reserve", file, n)
			}
		}
	}
}

// sharedOrder lists every file of gen/runtime that luagen emits for
// go-redis: all but the Functions client, the rueidis runtime, doc.go,
// standin.go (what luagen generates per package, standing in for it there)
// and the tests.
func TestRuntimeFilesListed(t *testing.T) {
	files, err := filepath.Glob("runtime/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		base := filepath.Base(f)
		if !strings.HasSuffix(base, "_test.go") && base != "doc.go" && base != "standin.go" && base != functionsFile && base != "rueidis.go" {
			got = append(got, base)
		}
	}
	want := append([]string{}, sharedOrder...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runtime files (-sharedOrder +on disk):\n%s", diff)
	}
}

// declaredNames are the package-level names a generated file declares,
// except the sentinels of @error codes.
func declaredNames(t *testing.T, file string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	sentinel := regexp.MustCompile(`^Err[A-Z]`)
	fixed := map[string]bool{"ErrPipeline": true, "ErrFunctionsMissing": true, "ErrFunctionsStale": true}
	var got []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				got = append(got, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					got = append(got, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !sentinel.MatchString(n.Name) || fixed[n.Name] {
							got = append(got, n.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(got)
	return got
}
