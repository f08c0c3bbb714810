package gen

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
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

// goldenFiles is the generator's output as golden file name -> content.
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
	return files
}

func TestGolden(t *testing.T) {
	got := goldenFiles(t)
	if *update {
		old, _ := filepath.Glob("testdata/golden/*.golden")
		for _, f := range old {
			os.Remove(f)
		}
		for name, content := range got {
			if err := os.WriteFile(filepath.Join("testdata/golden", name), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	onDisk, _ := filepath.Glob("testdata/golden/*.golden")
	var names []string
	for _, f := range onDisk {
		names = append(names, filepath.Base(f))
	}
	var want []string
	for name := range got {
		want = append(want, name)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("golden files (-generated +on disk):\n%s\nrun go test ./gen -update", diff)
	}
	for _, name := range names {
		disk, err := os.ReadFile(filepath.Join("testdata/golden", name))
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
	a, err := Generate(ins, Options{Package: "golden", Manifest: true})
	if err != nil {
		t.Fatal(err)
	}
	reversed := make([]Input, len(ins))
	for i, in := range ins {
		reversed[len(ins)-1-i] = in
	}
	b, err := Generate(reversed, Options{Package: "golden", Manifest: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("output depends on input order (-first +second):\n%s", diff)
	}
}
