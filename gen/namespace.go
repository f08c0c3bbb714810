package gen

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
)

// The generated package's names follow fixed patterns, so they are
// predictable and cannot collide by accident:
//
//   - per script x_y.lua: XY, XYParams, XYResult, XYScript, XYSource, the
//     method (*Batch).XY, one named type XY<Arg> per enum argument or
//     reply and its constants XY<Arg><Word>; unexported xYInfo, xYCall,
//     xYDecode and xYSource;
//   - per @error code: Err<Code>;
//   - the names the shared file declares (the runtime's, errorCodes and
//     allScripts), none of which ends in a per-script suffix.
//
// Two things that still spell the same name (a.lua and a_result.lua, the
// codes BADARG and BAD_ARG) are refused with file:line, never emitted.
//
// sharedNames and sharedMethods (of Batch) are read from gen/runtime, so
// they cannot fall behind it.
var sharedNames, sharedMethods = runtimeNames(append(append([]string{}, sharedOrder...), "rueidis.go"), sharedHeadNames, "Batch")

// imports are the package names the generated files import.
var imports = []string{"context", "errors", "fmt", "math", "redis", "regexp", "strconv", "strings", "time"}

// localNames are the parameter and variable names the generated functions
// use besides the key parameters.
var localNames = []string{"b", "c", "ctx", "d", "e", "p", "r", "v"}

// namespace assigns Go names and refuses collisions with file:line.
type namespace struct {
	owner map[string]string // name -> who uses it, for messages
	diags Diagnostics
}

// newNamespace claims the shared file's names, and the Functions file's
// when a library is asked for (only then: a script named load_functions.lua
// stays fine without one).
func newNamespace(functions bool) *namespace {
	ns := &namespace{owner: map[string]string{}}
	for _, n := range sharedNames {
		ns.owner[n] = "luagen's shared file"
	}
	if functions {
		for _, n := range functionNames {
			ns.owner[n] = "luagen's Functions file"
		}
	}
	for _, n := range sharedMethods {
		ns.owner["(*Batch)."+n] = "luagen's shared file"
	}
	return ns
}

// claim records that by (what, at file:line) declares name; fix says what
// the author should change when it is taken.
func (ns *namespace) claim(name, by, what, file string, line int, fix string) bool {
	if prev, ok := ns.owner[name]; ok && prev != by {
		msg := fmt.Sprintf("Go name %s is already used by %s; %s", strings.TrimPrefix(name, "(*Batch)."), prev, fix)
		if what != "" {
			msg = what + ": " + msg
		}
		ns.diags = append(ns.diags, Diagnostic{File: file, Line: line, Msg: msg})
		return false
	}
	ns.owner[name] = by
	return true
}

// reservedParam reports whether a key parameter may not be called n: a Go
// keyword, a predeclared identifier, an import, a local of the generated
// functions, or any package-level name of the generated package.
func (ns *namespace) reservedParam(n string) bool {
	if token.IsKeyword(n) || types.Universe.Lookup(n) != nil {
		return true
	}
	for _, l := range append(append([]string{}, imports...), localNames...) {
		if l == n {
			return true
		}
	}
	_, taken := ns.owner[n]
	return taken
}

// param is the Go parameter of a key: its name in camelCase, with Key
// appended while that is reserved (string gives stringKey).
func (ns *namespace) param(key string) string {
	p := unexported(key)
	for ns.reservedParam(p) {
		p += "Key"
	}
	return p
}

// perScriptSuffixes name the unexported declarations of each script.
var perScriptSuffixes = []string{"Info", "Call", "Decode", "Source"}

// names is every Go name one script's file declares or uses.
type names struct {
	Go, Unexported string
	Enums          map[string]string // arg/return name -> its enum type
	// Records maps "@arg limits" (tag and name) to the record's Go type.
	Records map[string]string
	// Consts maps a sentinel ("@arg now never", or "@return per_limit
	// retry_after never" in a record) to its Go constant.
	Consts map[string]string
	// Patterns maps "@arg lease" (or "@arg pairs key" in a record) to the
	// unexported regexp variable of its pattern.
	Patterns     map[string]string
	KeyParams    []string
	ArgFields    []string
	ReturnFields []string
}

// assignPackageNames claims every package-level name of every script.
func (ns *namespace) assignPackageNames(s *Script) *names {
	n := &names{Go: exported(s.Name), Unexported: unexported(s.Name), Enums: map[string]string{},
		Records: map[string]string{}, Consts: map[string]string{}, Patterns: map[string]string{}}
	file := s.File
	fix := "rename the script"
	// One message per script: the first name taken says what to rename.
	want := []string{n.Go, "(*Batch)." + n.Go}
	if len(s.Args) > 0 {
		want = append(want, n.Go+"Params")
	}
	for _, suffix := range []string{"Result", "Script", "Source", "Hash"} {
		want = append(want, n.Go+suffix)
	}
	for _, suffix := range perScriptSuffixes {
		want = append(want, n.Unexported+suffix)
	}
	for _, name := range want {
		if !ns.claim(name, s.File, "", file, 1, fix) {
			return n
		}
	}
	type enumDecl struct {
		words string
		line  int
	}
	declared := map[string]enumDecl{}
	for _, f := range append(append([]Field{}, s.Args...), s.Returns...) {
		if f.Type != Enum {
			continue
		}
		typ := n.Go + exported(f.Name)
		words := strings.Join(f.Enum, "|")
		if prev, ok := declared[typ]; ok {
			if prev.words != words {
				ns.diags = append(ns.diags, Diagnostic{File: file, Line: f.Line,
					Msg: fmt.Sprintf("%s: enum type %s is declared at line %d with other words; give the @arg and the @return the same words or different names", f.Name, typ, prev.line)})
			}
			n.Enums[f.Name] = typ
			continue
		}
		by := fmt.Sprintf("the enum %s of %s", f.Name, s.File)
		if !ns.claim(typ, by, "enum "+f.Name, file, f.Line, "rename the field") {
			continue
		}
		declared[typ] = enumDecl{words, f.Line}
		n.Enums[f.Name] = typ
		for _, w := range f.Enum {
			ns.claim(typ+exported(strings.ToLower(w)), fmt.Sprintf("enum word %s of %s", w, f.Name), "enum word "+w, file, f.Line, "rename the word or the field")
		}
	}
	ns.assignGrammarNames(s, n)
	return n
}

// assignGrammarNames names each record type (XY<Singular>), each sentinel
// constant (XY<Field><Sentinel>, or XY<Record><Field><Sentinel>) and each
// pattern variable (xY<Field>Pattern). An @arg and an @return may share
// one when they declare the same thing, as enums do.
func (ns *namespace) assignGrammarNames(s *Script, n *names) {
	shared := map[string]string{} // Go name -> what it stands for
	claim := func(name, what, sig string, f Field) bool {
		if prev, ok := shared[name]; ok {
			if prev != sig {
				ns.diags = append(ns.diags, Diagnostic{File: s.File, Line: f.Line,
					Msg: fmt.Sprintf("%s: Go name %s is declared for another %s of this script; give them the same declaration or different names", f.Name, name, what)})
				return false
			}
			return true
		}
		if !ns.claim(name, fmt.Sprintf("the %s %s of %s", what, f.Name, s.File), what+" "+f.Name, s.File, f.Line, "rename the field") {
			return false
		}
		shared[name] = sig
		return true
	}
	one := func(tag, prefix, unexp, path string, f Field) {
		for _, sen := range f.Sentinels {
			if f.Type.IsInstant() {
				continue // the zero time.Time is the sentinel 0
			}
			name := prefix + exported(f.Name) + exported(sen.Name)
			if claim(name, "sentinel", fmt.Sprintf("%s %s=%d", f.Type, sen.Name, sen.Value.Int), f) {
				n.Consts[path+" "+sen.Name] = name
			}
		}
		if f.Pattern != "" {
			name := unexp + exported(f.Name) + "Pattern"
			if claim(name, "pattern", f.Pattern, f) {
				n.Patterns[path] = name
			}
		}
	}
	for _, group := range []struct {
		tag string
		fs  []Field
	}{{"@key", s.Keys}, {"@arg", s.Args}, {"@return", s.Returns}} {
		for _, f := range group.fs {
			path := group.tag + " " + f.Name
			if f.Fields == nil {
				one(group.tag, n.Go, n.Unexported, path, f)
				continue
			}
			rec := n.Go + exported(singular(f.Name))
			var sig []string
			for _, sub := range f.Fields {
				sig = append(sig, sub.Name+" "+typeSig(sub))
			}
			if !claim(rec, "record", "("+strings.Join(sig, ", ")+")", f) {
				continue
			}
			n.Records[path] = rec
			for _, sub := range f.Fields {
				sub.Line = f.Line
				one(group.tag, rec, unexported(rec), path+" "+sub.Name, sub)
			}
		}
	}
}

// typeSig is a field's type as a comparable string.
func typeSig(f Field) string {
	return fmt.Sprintf("%s%v%s%v%v%s", f.Type, f.Enum, boundsText(f.Min, f.Max), f.Sentinels, f.Pattern, "")
}

// singular names a record after one of its variadic: limits gives limit;
// per_limit, status, address and axis stay.
func singular(name string) string {
	if strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss") && !strings.HasSuffix(name, "us") && !strings.HasSuffix(name, "is") && len(name) > 1 {
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// assignLocalNames names the key parameters and struct fields of a script,
// once every package-level name is known.
func (ns *namespace) assignLocalNames(s *Script, n *names) {
	params := map[string]Field{}
	for _, k := range s.Keys {
		p := ns.param(k.Name)
		if prev, ok := params[p]; ok {
			ns.diags = append(ns.diags, Diagnostic{File: s.File, Line: k.Line,
				Msg: fmt.Sprintf("@key %s: its Go parameter %s is already used by @key %s (line %d); rename one of them", k.Name, p, prev.Name, prev.Line)})
		}
		params[p] = k
		n.KeyParams = append(n.KeyParams, p)
	}
	fields := func(tag string, fs []Field) []string {
		seen := map[string]Field{}
		var out []string
		for _, f := range fs {
			g := exported(f.Name)
			if prev, ok := seen[g]; ok {
				ns.diags = append(ns.diags, Diagnostic{File: s.File, Line: f.Line,
					Msg: fmt.Sprintf("%s %s: its Go field %s is already used by %s %s (line %d); rename one of them", tag, f.Name, g, tag, prev.Name, prev.Line)})
			}
			seen[g] = f
			out = append(out, g)
		}
		return out
	}
	n.ArgFields = fields("@arg", s.Args)
	n.ReturnFields = fields("@return", s.Returns)
}

// assignErrorNames claims one sentinel per @error code; two codes that
// spell the same sentinel are refused on the later one.
func (ns *namespace) assignErrorNames(scripts []*Script) {
	seen := map[string]bool{}
	for _, s := range scripts {
		for _, e := range s.Errors {
			if seen[e.Code] {
				continue // the same code in several scripts shares one sentinel
			}
			seen[e.Code] = true
			name := errName(e.Code)
			if prev, ok := ns.owner[name]; ok {
				fix := "rename the code"
				if strings.HasPrefix(prev, "@error ") {
					fix = "spell the code the same way in every script"
				}
				ns.diags = append(ns.diags, Diagnostic{File: s.File, Line: e.Line,
					Msg: fmt.Sprintf("@error %s: its sentinel %s is already used by %s; %s", e.Code, name, prev, fix)})
				continue
			}
			ns.owner[name] = fmt.Sprintf("@error %s (%s:%d)", e.Code, s.File, e.Line)
		}
	}
}
