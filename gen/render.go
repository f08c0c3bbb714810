package gen

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// Go types and wire units of the header types.
var (
	goTypes   = map[Type]string{Int: "int64", Float: "float64", Bool: "bool", String: "string", Millis: "time.Duration", Micros: "time.Duration", Seconds: "time.Duration"}
	unitNames = map[Type]string{Millis: "milliseconds", Micros: "microseconds", Seconds: "seconds"}
	// methods names the encoder/decoder method of a type.
	methods = map[Type]string{Int: "int", Float: "float", Bool: "bool", String: "string", Millis: "ms", Micros: "us", Seconds: "s"}
)

type scriptView struct {
	Pkg, File, Go, Unexported string
	Literal                   string
	Doc                       string
	KeyParams, KeyArgs        string
	KeysExpr                  string
	Args, Returns             []fieldView
	Errors                    []ErrorCode
	Fixed                     int
	Rest                      bool
	NeedTime                  bool
}

type fieldView struct {
	Field, GoType, Comment string
	Variadic               bool
	name                   string
	typ                    Type
	index                  int // 0-based position in ARGV or the reply
}

// Encode is the statement that appends the argument held in expr.
func (f fieldView) Encode(expr string) string {
	switch f.typ {
	case Int, Bool, String:
		return fmt.Sprintf("e.%s(%s)", methods[f.typ], expr)
	}
	return fmt.Sprintf("e.%s(%q, %s)", methods[f.typ], f.name, expr)
}

// Decode is the expression that reads the field from the decoder d.
func (f fieldView) Decode() string {
	if f.Variadic {
		return fmt.Sprintf("rest(d, %d, %q, d.%s)", f.index, f.name, methods[f.typ])
	}
	return fmt.Sprintf("d.%s(%d, %q)", methods[f.typ], f.index, f.name)
}

func newScriptView(pkg string, s *Script) scriptView {
	v := scriptView{
		Pkg:        pkg,
		File:       s.Name + ".lua",
		Go:         exported(s.Name),
		Unexported: unexported(s.Name),
		Literal:    goLiteral(string(s.Source)),
		Errors:     s.Errors,
	}
	var params, args, fixed []string
	for _, k := range s.Keys {
		p := keyParam(k.Name)
		args = append(args, p)
		if k.Variadic {
			params = append(params, p+" []string")
			if len(fixed) == 0 {
				v.KeysExpr = p
			} else {
				v.KeysExpr = fmt.Sprintf("append([]string{%s}, %s...)", strings.Join(fixed, ", "), p)
			}
		} else {
			params = append(params, p+" string")
			fixed = append(fixed, p)
		}
	}
	if v.KeysExpr == "" && len(fixed) > 0 {
		v.KeysExpr = "[]string{" + strings.Join(fixed, ", ") + "}"
	} else if v.KeysExpr == "" {
		v.KeysExpr = "nil"
	}
	if len(params) > 0 {
		v.KeyParams = strings.Join(params, ", ") + ", "
		v.KeyArgs = strings.Join(args, ", ") + ", "
	}
	for i, a := range s.Args {
		v.Args = append(v.Args, newField(a, i, fmt.Sprintf("ARGV[%d]", i+1), "sent in whole "))
	}
	for i, r := range s.Returns {
		v.Returns = append(v.Returns, newField(r, i, fmt.Sprintf("reply element %d", i+1), "in "))
		if r.Variadic {
			v.Rest = true
		} else {
			v.Fixed++
		}
	}
	for _, f := range append(append([]Field{}, s.Args...), s.Returns...) {
		v.NeedTime = v.NeedTime || f.Type.IsDuration()
	}
	v.Doc = funcDoc(v.Go, v.File, s)
	return v
}

func newField(f Field, i int, where, unitPrefix string) fieldView {
	fv := fieldView{Field: exported(f.Name), GoType: goTypes[f.Type], Variadic: f.Variadic, name: f.Name, typ: f.Type, index: i}
	if f.Variadic {
		fv.GoType = "[]" + fv.GoType
		where += " onwards"
	}
	if f.Type.IsDuration() {
		where += ", " + unitPrefix + unitNames[f.Type]
	}
	if f.Doc == "" {
		fv.Comment = fmt.Sprintf("%s is %s.", fv.Field, where)
	} else {
		fv.Comment = fmt.Sprintf("%s (%s): %s", fv.Field, where, f.Doc)
	}
	return fv
}

// funcDoc is the doc comment of the call function: the header's summary,
// its keys, and the errors it can return.
func funcDoc(name, file string, s *Script) string {
	var b strings.Builder
	line := func(text string) {
		if text == "" {
			b.WriteString("//\n")
		} else {
			b.WriteString("// " + text + "\n")
		}
	}
	line(fmt.Sprintf("%s runs %s (EVALSHA, falling back to EVAL).", name, file))
	line("")
	for _, l := range strings.Split(s.Summary, "\n") {
		line(l)
	}
	if len(s.Keys) > 0 {
		line("")
		line("Keys:")
		for _, k := range s.Keys {
			text := "  - " + keyParam(k.Name)
			if k.Variadic {
				text += " (the rest of KEYS)"
			}
			if k.Doc != "" {
				text += ": " + k.Doc
			}
			line(text)
		}
	}
	if len(s.Errors) > 0 {
		line("")
		line("Error replies come back as a *ScriptError that matches, with errors.Is:")
		for _, e := range s.Errors {
			text := fmt.Sprintf("  - %s for %s", errName(e.Code), e.Code)
			if e.Doc != "" {
				text += ": " + e.Doc
			}
			line(text)
		}
	}
	return b.String()
}

// goLiteral quotes src so the constant holds it byte for byte: a raw string
// when that is exact and readable, strconv.Quote otherwise. Go drops \r from
// raw strings and cannot hold a backquote, NUL or BOM in one.
func goLiteral(src string) string {
	if utf8.ValidString(src) && !strings.ContainsAny(src, "`\r\x00\ufeff") {
		return "`" + src + "`"
	}
	return strconv.Quote(src)
}

type sharedView struct {
	Pkg     string
	Scripts []string // Go names
	Errors  []errorView
	Uses    map[string]bool
}

type errorView struct {
	Code, Sentinel, Doc string
}

func newSharedView(pkg string, scripts []*Script) sharedView {
	v := sharedView{Pkg: pkg, Uses: map[string]bool{}}
	seen := map[string]bool{}
	for _, s := range scripts {
		v.Scripts = append(v.Scripts, exported(s.Name))
		for _, e := range s.Errors {
			if !seen[e.Code] {
				seen[e.Code] = true
				v.Errors = append(v.Errors, errorView{Code: e.Code, Sentinel: errName(e.Code), Doc: e.Doc})
			}
		}
		for _, a := range s.Args {
			v.Uses["arg"+exported(methods[a.Type])] = true
			v.Uses["duration"] = v.Uses["duration"] || a.Type.IsDuration()
			v.Uses["argDuration"] = v.Uses["argDuration"] || a.Type.IsDuration()
		}
		for _, r := range s.Returns {
			v.Uses["ret"+exported(methods[r.Type])] = true
			v.Uses["duration"] = v.Uses["duration"] || r.Type.IsDuration()
			v.Uses["retRest"] = v.Uses["retRest"] || r.Variadic
		}
	}
	sortBy(v.Errors, func(e errorView) string { return e.Code })
	return v
}

func execute(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	out, err := format.Source(buf.Bytes())
	if err != nil {
		// A bug in luagen, not in the script: show the source to debug it.
		return nil, fmt.Errorf("luagen bug: generated code does not parse: %v\n%s", err, buf.Bytes())
	}
	return out, nil
}
