package gen

import (
	"bytes"
	"embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The runtime every generated package shares is ordinary Go in runtime/,
// built, vetted and tested there on its own (the sqlc way: templates hold
// only what varies per script). luagen writes the declarations of it that
// a package reaches into luagen.go, and those of functions.go into
// luagen_functions.go, after the few declarations that depend on the
// scripts (the templates), under the package's own name. What a package
// reaches: the templates' declarations, every name the script files use,
// every exported declaration, and everything those use, transitively (a
// method once its type is in and its name is called anywhere), so a
// package without durations has no duration code and no time import.

//go:embed runtime/*.go
var runtimeFS embed.FS

// sharedOrder is the order luagen.go holds the runtime's files in; every
// file of runtime/ but functions.go, doc.go, standin.go and the tests
// (which stand in for the generated part) is listed, and a test holds it.
var sharedOrder = []string{"errors.go", "goredis.go", "batch.go", "codec.go", "int.go", "float.go",
	"bool.go", "string.go", "enum.go", "pattern.go", "duration.go", "instant.go", "rest.go"}

// functionsFile is the runtime file of the Functions client.
const functionsFile = "functions.go"

// A clientKind is a Redis client library the generated code can be for.
type clientKind struct {
	Name        string // what -client takes: go-redis, rueidis, valkey
	Import      string // its import path
	Pkg         string // its package name
	Type        string // the type the calls take: redis.Scripter, rueidis.Client
	NewScript   string // the constructor of XScript, with NewScriptRO for no-writes
	NewScriptRO string
	// files are the runtime files it uses in place of the go-redis ones
	// (goredis.go, batch.go); nil for go-redis.
	files []string
}

// clients are what Options.Client may name. rueidis and valkey-go need Go
// 1.25 or later, so their bindings live in a module of their own.
var clients = []clientKind{
	{Name: "go-redis", Import: "github.com/redis/go-redis/v9", Pkg: "redis", Type: "redis.Scripter", NewScript: "redis.NewScript", NewScriptRO: "redis.NewScript"},
	{Name: "rueidis", Import: "github.com/redis/rueidis", Pkg: "rueidis", Type: "rueidis.Client", NewScript: "rueidis.NewLuaScript", NewScriptRO: "rueidis.NewLuaScriptReadOnly", files: []string{"rueidis.go"}},
	{Name: "valkey", Import: "github.com/valkey-io/valkey-go", Pkg: "valkey", Type: "valkey.Client", NewScript: "valkey.NewLuaScript", NewScriptRO: "valkey.NewLuaScriptReadOnly", files: []string{"valkey.go"}},
}

func clientNamed(name string) (clientKind, bool) {
	if name == "" {
		name = "go-redis"
	}
	for _, c := range clients {
		if c.Name == name {
			return c, true
		}
	}
	return clientKind{}, false
}

// valkeyNames turns the rueidis runtime into valkey-go's: the same API
// under other names (valkey-go is rueidis's fork).
var valkeyNames = strings.NewReplacer(
	`"github.com/redis/rueidis"`, `"github.com/valkey-io/valkey-go"`,
	"rueidis.", "valkey.", "RedisResult", "ValkeyResult", "RedisMessage", "ValkeyMessage",
	"IsRedisErr", "IsValkeyErr", "NonRedisError", "NonValkeyError", "rueidis", "valkey-go")

// sharedFiles are the runtime files of the shared file for client c.
func sharedFiles(c clientKind) []string {
	if c.files == nil {
		return sharedOrder
	}
	var out []string
	for _, f := range sharedOrder {
		if f != "goredis.go" && f != "batch.go" {
			out = append(out, f)
		}
	}
	return append(out, c.files...)
}

// goDecl is one top-level declaration of a Go file, with what it uses.
type goDecl struct {
	names    []string // the names it declares; for a method, the method's
	recv     string   // a method's receiver type, "" otherwise
	recvVar  string   // a method's receiver variable
	exported bool
	// ifaceMethods are the methods of the interfaces it declares: a type
	// that is in keeps them, since they may be called through it.
	ifaceMethods []string
	text         []byte // with its doc comment
	idents       map[string]bool
	// sels are the selectors it uses: "x.name" where x is an identifier
	// (the runtime's receivers are e for encoder, d for decoder...), and
	// "name" alone where x is an expression (cl.s.wrap gives "wrap").
	sels map[string]bool
}

// goFile is a parsed Go file: its imports (package name -> path) and
// declarations.
type goFile struct {
	imports map[string]string
	decls   []*goDecl
}

var runtimeFiles = loadRuntime()

func loadRuntime() map[string]*goFile {
	files := map[string]*goFile{}
	for _, name := range append(append([]string{}, sharedOrder...), functionsFile, "rueidis.go", "valkey.go") {
		src, err := runtimeFS.ReadFile("runtime/" + name)
		if name == "valkey.go" {
			src, err = runtimeFS.ReadFile("runtime/rueidis.go")
			src = []byte(valkeyNames.Replace(string(src)))
		}
		if err != nil {
			panic(err)
		}
		f, err := parseGo(name, src)
		if err != nil {
			panic("luagen bug: " + err.Error())
		}
		files[name] = f
	}
	return files
}

// importName is the package name of an import path: its last element, but
// for a major-version suffix (github.com/redis/go-redis/v9 is redis).
func importName(p string) string {
	switch p {
	case "github.com/redis/go-redis/v9":
		return "redis"
	case "github.com/valkey-io/valkey-go":
		return "valkey"
	}
	return path.Base(p)
}

func parseGo(name string, src []byte) (*goFile, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	gf := &goFile{imports: map[string]string{}}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			for _, s := range g.Specs {
				p, _ := strconv.Unquote(s.(*ast.ImportSpec).Path.Value)
				gf.imports[importName(p)] = p
			}
			continue
		}
		gd := &goDecl{idents: map[string]bool{}, sels: map[string]bool{}}
		start := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
			gd.names = []string{d.Name.Name}
			if d.Recv != nil {
				gd.recv = recvType(d.Recv.List[0].Type)
				if names := d.Recv.List[0].Names; len(names) > 0 {
					gd.recvVar = names[0].Name
				}
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					gd.names = append(gd.names, s.Name.Name)
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								gd.ifaceMethods = append(gd.ifaceMethods, n.Name)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						gd.names = append(gd.names, n.Name)
					}
				}
			}
		}
		for _, n := range gd.names {
			gd.exported = gd.exported || token.IsExported(n)
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					gd.sels[x.Name+"."+n.Sel.Name] = true
				} else {
					gd.sels[n.Sel.Name] = true
				}
				ast.Inspect(n.X, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok {
						gd.idents[id.Name] = true
					}
					return true
				})
				return false
			case *ast.Ident:
				gd.idents[n.Name] = true
			}
			return true
		})
		gd.text = src[fset.Position(start).Offset:fset.Position(d.End()).Offset]
		gf.decls = append(gf.decls, gd)
	}
	return gf, nil
}

func recvType(t ast.Expr) string {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// reach marks the declarations of files that a package reaches from roots
// (every declaration of the heads and the script files) and returns them
// per file.
func reach(roots []*goFile, files []string) map[string][]*goDecl {
	idents, sels := map[string]bool{}, map[string]bool{}
	add := func(d *goDecl) {
		for n := range d.idents {
			idents[n] = true
		}
		for n := range d.sels {
			sels[n] = true
		}
		for _, n := range d.ifaceMethods {
			sels[n] = true
		}
	}
	for _, f := range roots {
		for _, d := range f.decls {
			add(d)
		}
	}
	in := map[*goDecl]bool{}
	types := map[string]bool{} // the types that are in, for their methods
	for changed := true; changed; {
		changed = false
		for _, name := range files {
			for _, d := range runtimeFiles[name].decls {
				if in[d] {
					continue
				}
				var want bool
				if d.recv != "" {
					m := d.names[0]
					want = types[d.recv] && (d.exported || sels[m] || sels[d.recvVar+"."+m])
				} else {
					want = d.exported || d.names[0] == "init"
					for _, n := range d.names {
						want = want || idents[n]
					}
				}
				if want {
					in[d], changed = true, true
					add(d)
					for _, n := range d.names {
						if d.recv == "" {
							types[n] = true
						}
					}
				}
			}
		}
	}
	out := map[string][]*goDecl{}
	for _, name := range files {
		for _, d := range runtimeFiles[name].decls {
			if in[d] {
				out[name] = append(out[name], d)
			}
		}
	}
	return out
}

// bundle writes one generated file: head (a Go file rendered from a
// template: the marker, the package clause and the declarations that
// depend on the scripts), then the declarations decls of the runtime
// files, in order, with one import block for what they all use.
func bundle(head []byte, h *goFile, files []string, decls map[string][]*goDecl) ([]byte, error) {
	paths := map[string]bool{}
	use := func(idents map[string]bool, imports map[string]string) {
		for n := range idents {
			if p, ok := imports[n]; ok {
				paths[p] = true
			}
		}
	}
	for _, d := range h.decls {
		use(d.idents, h.imports)
	}
	for _, name := range files {
		for _, d := range decls[name] {
			use(d.idents, runtimeFiles[name].imports)
		}
	}
	var std, other []string
	for p := range paths {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			other = append(other, p)
		} else {
			std = append(std, p)
		}
	}
	sort.Strings(std)
	sort.Strings(other)

	var b bytes.Buffer
	pkg := bytes.Index(head, []byte("\npackage "))
	if pkg < 0 {
		return nil, fmt.Errorf("luagen bug: no package clause in\n%s", head)
	}
	nl := bytes.IndexByte(head[pkg+1:], '\n')
	b.Write(head[:pkg+1+nl+1]) // the marker, comments and the package clause
	if len(paths) > 0 {
		b.WriteString("\nimport (\n")
		for _, p := range std {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		if len(std) > 0 && len(other) > 0 {
			b.WriteString("\n")
		}
		for _, p := range other {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		b.WriteString(")\n")
	}
	for _, d := range h.decls {
		b.WriteString("\n")
		b.Write(d.text)
		b.WriteString("\n")
	}
	for _, name := range files {
		for _, d := range decls[name] {
			b.WriteString("\n")
			b.Write(d.text)
			b.WriteString("\n")
		}
	}
	return formatGo(b.Bytes())
}

// renderShared renders the shared file, and the Functions file when
// functions is set, from their templates and the runtime: scripts are the
// script files, already rendered, whose names root what is reached.
func renderShared(client clientKind, shared, functions any, scripts []OutFile) (sharedSrc, functionsSrc []byte, err error) {
	var roots []*goFile
	for _, s := range scripts {
		f, err := parseGo(s.Name, s.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("luagen bug: %v", err)
		}
		roots = append(roots, f)
	}
	head := func(name string, data any) ([]byte, *goFile, error) {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, name, data); err != nil {
			return nil, nil, err
		}
		f, err := parseGo(name, b.Bytes())
		if err != nil {
			return nil, nil, fmt.Errorf("luagen bug: generated code does not parse: %v\n%s", err, b.Bytes())
		}
		return b.Bytes(), f, nil
	}
	sharedHead, sh, err := head("shared.go.tmpl", shared)
	if err != nil {
		return nil, nil, err
	}
	roots = append(roots, sh)
	files := sharedFiles(client)
	var funcHead []byte
	var fh *goFile
	if functions != nil {
		if funcHead, fh, err = head("functions.go.tmpl", functions); err != nil {
			return nil, nil, err
		}
		roots = append(roots, fh)
		files = append(append([]string{}, files...), functionsFile)
	}
	decls := reach(roots, files)
	if sharedSrc, err = bundle(sharedHead, sh, sharedFiles(client), decls); err != nil {
		return nil, nil, err
	}
	if functions != nil {
		if functionsSrc, err = bundle(funcHead, fh, []string{functionsFile}, decls); err != nil {
			return nil, nil, err
		}
	}
	return sharedSrc, functionsSrc, nil
}

// The names the templates declare before the runtime (besides the @error
// sentinels).
var (
	sharedHeadNames    = []string{"allScripts", "errorCodes", "MultiKeyForm", "multiKeyForms", "MultiKeyItself", "multiKeyItself", "multiBefore", "multiAfter"}
	functionsHeadNames = []string{"FunctionsLibrary", "functionOf", "functionsCode"}
)

// runtimeNames are the package-level names the given runtime files can
// declare, and the extra ones, sorted, and the methods of typ they declare.
func runtimeNames(files []string, extra []string, typ string) (names, methods []string) {
	names = append(names, extra...)
	for _, f := range files {
		for _, d := range runtimeFiles[f].decls {
			switch d.recv {
			case "":
				names = append(names, d.names...)
			case typ:
				methods = append(methods, d.names...)
			}
		}
	}
	sort.Strings(names)
	return names, methods
}
