package gen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current generator")

// goldenInputs reads testdata/scripts, which together use every type and
// every variadic form (key, arg, rest of the reply, alone and after fixed
// ones) and a bare scalar reply.
func goldenInputs(t *testing.T) []Input {
	t.Helper()
	files, err := filepath.Glob("testdata/scripts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test scripts: %v", err)
	}
	var ins []Input
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: filepath.ToSlash(f), Src: src})
	}
	return ins
}

// goldenFunctions is the library the golden output is generated with, in
// testdata/golden/functions.
const goldenFunctions = "golden"

// goldenFiles is the generator's output as golden file name -> content:
// without a Functions library, and under functions/ each file that a
// library adds or changes.
func goldenFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out, err := Generate(goldenInputs(t), Options{Package: "golden", Manifest: true})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"scripts.json.golden": out.Manifest}
	for _, f := range out.Files {
		files[f.Name+".golden"] = f.Content
	}
	lib, err := Generate(goldenInputs(t), Options{Package: "golden", Manifest: true, Functions: goldenFunctions})
	if err != nil {
		t.Fatal(err)
	}
	files["functions/scripts.json.golden"] = lib.Manifest
	for _, f := range lib.Files {
		if !bytes.Equal(files[f.Name+".golden"], f.Content) {
			files["functions/"+f.Name+".golden"] = f.Content
		}
	}
	return files
}

// withFunctions is the golden output with the library: every file the
// plain output has, as functions/ changes it, plus the library's own.
func withFunctions(files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for name, content := range files {
		if !strings.HasPrefix(name, "functions/") {
			out[name] = content
		}
	}
	for name, content := range files {
		if rest, ok := strings.CutPrefix(name, "functions/"); ok {
			out[rest] = content
		}
	}
	return out
}

// A library changes only the manifest and adds its own two files; each
// script's file and the shared file stay as they were, so -functions never
// touches the per-script API.
func TestFunctionsChangeOnlyTheirFiles(t *testing.T) {
	var got []string
	for name := range goldenFiles(t) {
		if rest, ok := strings.CutPrefix(name, "functions/"); ok {
			got = append(got, rest)
		}
	}
	sort.Strings(got)
	want := []string{LibraryFile(goldenFunctions) + ".golden", FunctionsGoFile + ".golden", "scripts.json.golden"}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files a library changes (-want +got):\n%s", diff)
	}
}

func TestGolden(t *testing.T) {
	got := goldenFiles(t)
	if *update {
		old, _ := filepath.Glob("testdata/golden/*.golden")
		lib, _ := filepath.Glob("testdata/golden/functions/*.golden")
		for _, f := range append(old, lib...) {
			os.Remove(f)
		}
		for name, content := range got {
			path := filepath.Join("testdata/golden", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	onDisk, _ := filepath.Glob("testdata/golden/*.golden")
	lib, _ := filepath.Glob("testdata/golden/functions/*.golden")
	var names []string
	for _, f := range onDisk {
		names = append(names, filepath.Base(f))
	}
	for _, f := range lib {
		names = append(names, "functions/"+filepath.Base(f))
	}
	sort.Strings(names)
	var want []string
	for name := range got {
		want = append(want, name)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("golden files (-generated +on disk):\n%s\nrun go test ./gen -update", diff)
	}
	for _, name := range names {
		disk, err := os.ReadFile(filepath.Join("testdata/golden", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(disk), string(got[name])); diff != "" {
			t.Errorf("%s (-golden +generated):\n%s\nrun go test ./gen -update", name, diff)
		}
	}
}

// Generating twice, from inputs in any order, gives the same bytes.
func TestDeterministic(t *testing.T) {
	ins := goldenInputs(t)
	opt := Options{Package: "golden", Manifest: true, Functions: goldenFunctions}
	a, err := Generate(ins, opt)
	if err != nil {
		t.Fatal(err)
	}
	reversed := make([]Input, len(ins))
	for i, in := range ins {
		reversed[len(ins)-1-i] = in
	}
	b, err := Generate(reversed, opt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("output depends on input order (-first +second):\n%s", diff)
	}
}

// -client rueidis and valkey write the same API over those clients (their
// code is compiled and run in clients/rueidis and clients/valkey, which
// need Go 1.25): no go-redis import anywhere, the client's own instead, the
// same Params and Results as for go-redis, and no Functions.
func TestOtherClients(t *testing.T) {
	plain, err := Generate(goldenInputs(t), Options{Package: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"rueidis", "valkey"} {
		out, err := Generate(goldenInputs(t), Options{Package: "golden", Client: client})
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		c, _ := clientNamed(client)
		for i, f := range out.Files {
			src := string(f.Content)
			if strings.Contains(src, `"github.com/redis/go-redis/v9"`) || !strings.Contains(src, `"`+c.Import+`"`) {
				t.Errorf("%s: %s imports go-redis or not %s", client, f.Name, c.Import)
			}
			if f.Name == SharedFile {
				continue
			}
			for _, typ := range []string{"Params struct {", "Result struct {"} {
				if a, b := section(string(plain.Files[i].Content), typ), section(src, typ); a != b {
					t.Errorf("%s: %s: the %s differs from go-redis's:\n%s\n%s", client, f.Name, typ, a, b)
				}
			}
		}
		if _, err := Generate(goldenInputs(t), Options{Package: "golden", Client: client, Functions: "lib"}); err == nil || !strings.Contains(err.Error(), "go-redis only") {
			t.Errorf("%s with -functions: %v", client, err)
		}
	}
	if _, err := Generate(goldenInputs(t), Options{Package: "golden", Client: "redigo"}); err == nil {
		t.Error("an unknown client was accepted")
	}
}

// section is the text from the first line containing marker to the next
// closing brace at the start of a line.
func section(src, marker string) string {
	i := strings.Index(src, marker)
	if i < 0 {
		return ""
	}
	j := strings.Index(src[i:], "\n}\n")
	return src[i : i+j]
}
