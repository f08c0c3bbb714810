package gen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// The golden output must compile, pass go vet, and work: it is copied, with
// its Functions library, into a throwaway module with the checkout's
// requirements and tested by testdata/runtime_test.go.txt against
// miniredis, a real redis-server, a redis-server without the _RO commands,
// and a redis-server called through the library, and by
// testdata/functions_test.go.txt. Without redis-server only the miniredis
// part runs (and the test fails where CI or REDLIMIT_REQUIRE_REDIS=1 is
// set). The output without a library, whose shared file differs, must
// pass go vet too.
func TestGoldenCompilesAndRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	golden := goldenFiles(t)
	plain := map[string][]byte{}
	for name, content := range golden {
		if strings.HasSuffix(name, ".go.golden") && !strings.HasPrefix(name, "functions/") {
			plain[strings.TrimSuffix(name, ".golden")] = content
		}
	}
	goCmd(t, goModule(t, "example.com/golden", plain), nil, "vet", "./...")

	files := map[string][]byte{}
	for name, content := range withFunctions(golden) {
		if name != "scripts.json.golden" {
			files[strings.TrimSuffix(name, ".golden")] = content
		}
	}
	for _, name := range []string{"runtime_test.go", "functions_test.go"} {
		src, err := os.ReadFile("testdata/" + name + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		files[name] = src
	}
	dir := goModule(t, "example.com/golden", files)

	// A real server, one without EVALSHA_RO/EVAL_RO as Redis 6.2 is, and
	// one for the Functions library.
	var env []string
	if addr := redisserver.Maybe(t); addr != "" {
		env = []string{
			"GOLDEN_REDIS_ADDR=" + addr,
			"GOLDEN_REDIS_NO_RO_ADDR=" + redisserver.Start(t, "--rename-command", "EVALSHA_RO", "", "--rename-command", "EVAL_RO", ""),
			"GOLDEN_REDIS_FUNCTIONS_ADDR=" + redisserver.Start(t),
			"GOLDEN_REQUIRE_REDIS=1",
		}
	}
	goCmd(t, dir, env, "vet", "./...")
	goCmd(t, dir, env, "test", "-count=1", "./...")
}

// goModule writes files (paths relative to the module root) into a new
// module that has the checkout's requirements, and returns its folder.
func goModule(t *testing.T, module string, files map[string][]byte) string {
	t.Helper()
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files["go.mod"] = []byte(strings.Replace(string(gomod), "module github.com/redlimit/redlimit", "module "+module, 1))
	files["go.sum"] = gosum
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// luagen writes only the runtime a package reaches: a package of one
// script with one type (and one without arguments, and one with a rest
// reply), each with and without a Functions library, must build and pass
// go vet with what it got. An unused import or a missing helper fails it.
func TestEachTypeCompilesAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	files := map[string][]byte{}
	add := func(pkg, src string, functions bool) {
		out, err := Generate([]Input{{Path: "x.lua", Src: []byte(src)}}, Options{Package: pkg, Functions: map[bool]string{true: "lib"}[functions]})
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, f := range out.Files {
			files[pkg+"/"+f.Name] = f.Content
		}
	}
	types := []string{"int", "float", "bool", "string", "ms", "us", "s", "unix_ms", "unix_us", "unix_s", "enum(a|b)", "int[1..]", "float[..2.5]"}
	for i, typ := range types {
		src := "--- One type.\n--- @arg a " + typ + "\n--- @return r " + typ + "\nlocal a = ARGV[1]\nreturn a\n"
		add(fmt.Sprintf("t%d", i), src, false)
		add(fmt.Sprintf("f%d", i), src, true)
	}
	add("none", "--- No arguments.\n--- @key k\n--- @return ...r string\nlocal k = KEYS[1]\nreturn {k}\n", false)
	goCmd(t, goModule(t, "example.com/alone", files), nil, "vet", "./...")
}
