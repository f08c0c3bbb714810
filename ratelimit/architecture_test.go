package ratelimit_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// layering is the order in which the files of package ratelimit depend on
// each other, lowest first: a file names only what it declares itself or
// what a file before it declares. ARCHITECTURE.md ("A decision's path")
// draws the part from send.go to hook.go. Every non-test file is listed
// once; a new file takes its place here.
var layering = []string{
	// The vocabulary: values every layer names, on no path.
	"doc.go",
	"errors.go",
	"limit.go",
	"algorithm.go",
	"bounds.go",
	"client.go",
	"decision.go",
	// What the stages use: FailLocal's memory, the scripts' table.
	"local.go",
	"scripts.go",
	"scripts_atomic.go",
	// A decision's path, its innermost stage first; late.go gives back
	// what its send stages learn too late.
	"late.go",
	"send.go",
	"coalesce.go",
	"fallback.go",
	"lockout.go",
	"denycache.go",
	"validate.go",
	"hook.go",
	// The face: the Limiter that holds the path, the rules over it, the
	// options that build it.
	"waitqueue.go",
	"limiter.go",
	"reserve.go",
	"rule.go",
	"atomic.go",
	"all.go",
	"wait.go",
	"options.go",
}

// vocabulary is how many files at the start of layering are values, which
// the path order (TestDecisionPath) does not count as places.
const vocabulary = 7

// maxAgainst is the most pairs of files that may name each other against
// the layering.
const maxAgainst = 5

// TestLayering counts the pairs of files in which the lower one (by
// layering) names something the higher one declares. Names are resolved by
// go/types, so a field, a method and a package-level name count alike.
func TestLayering(t *testing.T) {
	p := loadPackage(t)
	against := map[[2]string][]string{}
	for id, obj := range p.info.Uses {
		from, to := p.file(id.Pos()), p.file(obj.Pos())
		if obj.Pkg() != p.pkg || from == to || to == "" {
			continue
		}
		if p.rank[to] > p.rank[from] {
			k := [2]string{from, to}
			against[k] = append(against[k], id.Name)
		}
	}
	var lines []string
	for k, names := range against {
		sort.Strings(names)
		lines = append(lines, fmt.Sprintf("%s → %s (%s)", k[0], k[1], strings.Join(dedup(names), ", ")))
	}
	sort.Strings(lines)
	for _, l := range lines {
		t.Logf("against the layering: %s", l)
	}
	if len(against) > maxAgainst {
		t.Errorf("%d pairs of files name each other against the layering, want at most %d", len(against), maxAgainst)
	}
	t.Logf("%d pairs against the layering (at most %d)", len(against), maxAgainst)
}

// TestDecisionPath follows the calls from each entry of the face, as
// written (a call through a func-typed field enters the file that declares
// the field; calls through interfaces are not followed), and holds the
// path to two rules. No call goes back up the layering, so along any
// chain of calls a file is entered at most once and never returned to
// once left. And from Limiter.AllowN the path meets the stages' files
// first in the order of the layering, top down, so the diagram in
// ARCHITECTURE.md, the layering above and the code read alike.
func TestDecisionPath(t *testing.T) {
	p := loadPackage(t)
	for _, entry := range []string{"Limiter.AllowN", "Limiter.Peek", "Limiter.WaitN", "Limiter.Reset", "all.AllowN", "multi.AllowN", "selectRule.AllowN"} {
		var order []string
		seen := map[*types.Func]bool{}
		var walk func(fn *types.Func)
		walk = func(fn *types.Func) {
			if seen[fn] {
				return
			}
			seen[fn] = true
			decl := p.decls[fn]
			if decl == nil || decl.Body == nil {
				return
			}
			here := p.file(decl.Pos())
			ast.Inspect(decl.Body, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				obj := p.callee(c)
				if obj == nil || obj.Pkg() != p.pkg {
					return true
				}
				to := p.file(obj.Pos())
				if p.rank[to] > p.rank[here] {
					t.Errorf("%s: %s calls up the layering, from %s into %s (%s)", entry, p.fset.Position(c.Pos()), here, to, obj.Name())
				}
				if entry == "Limiter.AllowN" && p.rank[to] >= vocabulary && !contains(order, to) {
					order = append(order, to)
				}
				if f, ok := obj.(*types.Func); ok {
					walk(f)
				}
				return true
			})
		}
		fn := p.method(t, entry)
		order = append(order, p.file(fn.Pos()))
		walk(fn)
		if entry != "Limiter.AllowN" {
			continue
		}
		t.Logf("the path from AllowN: %s", strings.Join(order, " → "))
		for i := 1; i < len(order); i++ {
			if p.rank[order[i]] >= p.rank[order[i-1]] {
				t.Errorf("the path from AllowN meets %s after %s, against the layering", order[i], order[i-1])
			}
		}
	}
}

type loaded struct {
	fset  *token.FileSet
	pkg   *types.Package
	info  *types.Info
	rank  map[string]int
	decls map[*types.Func]*ast.FuncDecl
}

// loadPackage type-checks the non-test files of this directory with the
// standard library alone: the imports come from the export data that
// `go list -export` names.
func loadPackage(t *testing.T) *loaded {
	t.Helper()
	exports := exportData(t)
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	p := &loaded{fset: fset, rank: map[string]int{}, decls: map[*types.Func]*ast.FuncDecl{}}
	for i, f := range layering {
		if _, dup := p.rank[f]; dup {
			t.Fatalf("%s is twice in the layering", f)
		}
		p.rank[f] = i
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if _, ok := p.rank[name]; !ok {
			t.Errorf("%s is not in the layering: give it its place", name)
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for f := range p.rank {
		if !contains(names, f) {
			t.Errorf("the layering names %s, which is no file", f)
		}
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if e, ok := exports[path]; ok && e != "" {
			return os.Open(e)
		}
		return nil, fmt.Errorf("no export data for %q", path)
	})
	p.info = &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	p.pkg, err = (&types.Config{Importer: imp}).Check("github.com/redlimit/redlimit/ratelimit", fset, files, p.info)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fn, ok := p.info.Defs[fd.Name].(*types.Func); ok {
					p.decls[fn] = fd
				}
			}
		}
	}
	return p
}

// exportData maps each import path this package needs to its export data.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	out, err := exec.Command(goCmd, "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	m := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		m[p.ImportPath] = p.Export
	}
	return m
}

// file is the base name of the file pos is in ("" for none).
func (p *loaded) file(pos token.Pos) string {
	if !pos.IsValid() {
		return ""
	}
	return filepath.Base(p.fset.Position(pos).Filename)
}

// callee is what a call calls, as written: a function, a method (by its
// declaration, not through an interface), or a func-typed field or
// variable; nil for anything else.
func (p *loaded) callee(c *ast.CallExpr) types.Object {
	var id *ast.Ident
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.IndexExpr: // a generic function's instance
		if i, ok := f.X.(*ast.Ident); ok {
			id = i
		}
	default:
		return nil
	}
	if id == nil {
		return nil
	}
	switch obj := p.info.Uses[id].(type) {
	case *types.Func:
		if recv := obj.Type().(*types.Signature).Recv(); recv != nil {
			if _, iface := recv.Type().Underlying().(*types.Interface); iface {
				return nil
			}
		}
		return obj
	case *types.Var:
		if _, ok := obj.Type().Underlying().(*types.Signature); ok && obj.Parent() != nil && obj.Parent() != p.pkg.Scope() {
			return nil // a local or a parameter
		}
		if _, ok := obj.Type().Underlying().(*types.Signature); ok {
			return obj
		}
	}
	return nil
}

// method finds "Type.Method", or a function by its name alone.
func (p *loaded) method(t *testing.T, name string) *types.Func {
	t.Helper()
	typ, m, ok := strings.Cut(name, ".")
	if !ok {
		return p.pkg.Scope().Lookup(name).(*types.Func)
	}
	obj := p.pkg.Scope().Lookup(typ)
	if obj == nil {
		t.Fatalf("no type %s", typ)
	}
	fn, _, _ := types.LookupFieldOrMethod(types.NewPointer(obj.Type()), true, p.pkg, m)
	f, ok := fn.(*types.Func)
	if !ok {
		t.Fatalf("no method %s", name)
	}
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func dedup(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
