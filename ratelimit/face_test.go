package ratelimit_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The face: how many names each package of ratelimit exports, and how
// long its doc comments are. This table is the one source of the rule
// (docs/api.md points here): every package under ratelimit/ but internal
// ones is in it, a doc comment (a package's or an exported identifier's)
// has at most maxWords words, and their average is at most avgWords, as in
// x/time/rate.
var face = []struct {
	dir   string // under ratelimit/
	names int    // at most this many exported identifiers; 0 for no budget
}{
	// 50, and 5 for reserve then settle: Reserve, Reservation, its Settle
	// and Cancel, WithSettleWithin. Hooks that say where a decision came
	// from add none: WithHook may be given several times, and the source
	// and a lockout are fields (Decision.Source, a string of documented
	// words, and Decision.LockedOut), not a type with constants. Reserving
	// with any rule adds none: Rule gained Reserve (an interface's methods
	// are not counted). 4 for quotas by the calendar: Daily,
	// Weekly, Monthly, Yearly, each a Limit (one constructor and a period
	// type with constants would be 5); FixedWindow's settle, the reset
	// instant (now + ResetAfter) and the usage read-out (Peek) add none.
	{".", 59},
	{"clientip", 0},
	{"httplimit", 0},
	{"inflight", 0},
	{"preflight", 0},
}

const (
	maxWords = 120
	avgWords = 35
)

// A name is counted as go doc lists it: each exported constant, variable,
// function, type and method of an exported type (not a struct's fields or
// an interface's methods).
func TestFace(t *testing.T) {
	listed := map[string]bool{}
	var words, comments int
	for _, p := range face {
		listed[p.dir] = true
		d := readDoc(t, p.dir)
		ds := docs(d)
		if p.names > 0 && len(ds)-1 > p.names {
			t.Errorf("%s exports %d names, more than its budget of %d", p.dir, len(ds)-1, p.names)
		}
		for _, c := range ds {
			n := len(strings.Fields(c.text))
			if n > maxWords {
				t.Errorf("%s: the doc comment of %s has %d words, more than %d: move the rest to docs/", p.dir, c.name, n, maxWords)
			}
			if n == 0 {
				t.Errorf("%s: %s has no doc comment", p.dir, c.name)
			}
			words += n
			comments++
		}
	}
	if avg := float64(words) / float64(comments); avg > avgWords {
		t.Errorf("doc comments average %.1f words, more than %d", avg, avgWords)
	}
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		if e.Name() == "internal" || e.Name() == "testdata" {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 && !listed[path] {
			t.Errorf("package ratelimit/%s is not in the table of TestFace", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type comment struct{ name, text string }

// docs returns the package's doc comment, then each exported name's.
func docs(d *doc.Package) []comment {
	cs := []comment{{"the package", d.Doc}}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, s := range v.Decl.Specs {
				spec := s.(*ast.ValueSpec)
				for _, id := range spec.Names {
					if !id.IsExported() {
						continue
					}
					text := v.Doc
					if spec.Doc != nil {
						text = spec.Doc.Text()
					}
					cs = append(cs, comment{id.Name, text})
				}
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		cs = append(cs, comment{f.Name, f.Doc})
	}
	for _, ty := range d.Types {
		cs = append(cs, comment{ty.Name, ty.Doc})
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			cs = append(cs, comment{f.Name, f.Doc})
		}
		for _, m := range ty.Methods {
			cs = append(cs, comment{ty.Name + "." + m.Name, m.Doc})
		}
	}
	return cs
}

// readDoc reads the exported API of the package in dir, without its tests.
func readDoc(t *testing.T, dir string) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%s holds %d packages, want 1", dir, len(pkgs))
	}
	for _, p := range pkgs {
		var names []string
		for name := range p.Files {
			names = append(names, name)
		}
		sort.Strings(names)
		files := make([]*ast.File, len(names))
		for i, name := range names {
			files[i] = p.Files[name]
		}
		d, err := doc.NewFromFiles(fset, files, "github.com/redlimit/redlimit/ratelimit/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return nil
}
