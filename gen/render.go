package gen

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// goType is the Go type of a header type (enums have their own).
func goType(t Type) string {
	switch t {
	case Int:
		return "int64"
	case Float:
		return "float64"
	case Bool:
		return "bool"
	case String, Enum:
		return "string"
	}
	if t.IsDuration() {
		return "time.Duration"
	}
	return "time.Time"
}

// method names the encoder/decoder method of a type.
func method(t Type) string {
	switch t {
	case Millis, Micros:
		return string(t)
	case Seconds:
		return "seconds" // s would be found wherever the field call.s is
	case UnixMs:
		return "unixMs"
	case UnixUs:
		return "unixUs"
	case UnixS:
		return "unixS"
	}
	return string(t)
}

type scriptView struct {
	Pkg, File, Go, Unexported string
	Literal                   string
	Doc                       string
	ReadOnly                  bool
	KeyParams, KeyArgs        string
	KeysExpr                  string
	HasArgs                   bool
	Args, Returns             []fieldView
	Enums                     []enumView
	Fixed                     int
	Rest                      bool
	NeedTime                  bool
}

type enumView struct {
	Type, Doc string
	Consts    []enumConst
}

type enumConst struct{ Name, Word string }

type fieldView struct {
	Field, GoType, Comment string
	Variadic               bool
	name                   string
	f                      Field
	enumType               string
	index                  int // 0-based position in ARGV or the reply
}

// rangeExpr is the Go expression of a field's bounds: nil, atLeast(lo),
// atMost(hi) or between(lo, hi).
func (f fieldView) rangeExpr() string {
	lo, hi := f.f.Min, f.f.Max
	num := func(b *Bound) string {
		if f.f.Type == Float {
			return strconv.FormatFloat(b.Float, 'g', -1, 64)
		}
		return strconv.FormatInt(b.Int, 10)
	}
	suffix := ""
	if f.f.Type == Float {
		suffix = "F"
	}
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("between%s(%s, %s)", suffix, num(lo), num(hi))
	case lo != nil:
		return fmt.Sprintf("atLeast%s(%s)", suffix, num(lo))
	case hi != nil:
		return fmt.Sprintf("atMost%s(%s)", suffix, num(hi))
	}
	return "nil"
}

func (f fieldView) words() string {
	var q []string
	for _, w := range f.f.Enum {
		q = append(q, strconv.Quote(w))
	}
	return strings.Join(q, ", ")
}

// Encode is the statement that appends the argument held in expr.
func (f fieldView) Encode(expr string) string {
	switch f.f.Type {
	case Bool, String:
		return fmt.Sprintf("e.%s(%s)", method(f.f.Type), expr)
	case Enum:
		return fmt.Sprintf("e.enum(%q, string(%s), %s)", f.name, expr, f.words())
	}
	return fmt.Sprintf("e.%s(%q, %s, %s)", method(f.f.Type), f.name, expr, f.rangeExpr())
}

// decodeOne is the expression that reads element i (an expression) of the
// reply from the decoder d.
func (f fieldView) decodeOne(i string) string {
	switch f.f.Type {
	case Bool, String:
		return fmt.Sprintf("d.%s(%s, %q)", method(f.f.Type), i, f.name)
	case Enum:
		return fmt.Sprintf("%s(d.enum(%s, %q, %s))", f.enumType, i, f.name, f.words())
	}
	return fmt.Sprintf("d.%s(%s, %q, %s)", method(f.f.Type), i, f.name, f.rangeExpr())
}

// Decode is the expression that reads the field from the decoder d.
func (f fieldView) Decode() string {
	if f.Variadic {
		elem := goType(f.f.Type)
		if f.enumType != "" {
			elem = f.enumType
		}
		return fmt.Sprintf("rest(&d, %d, func(i int) %s { return %s })", f.index, elem, f.decodeOne("i"))
	}
	return f.decodeOne(strconv.Itoa(f.index))
}

func newScriptView(pkg string, s *Script, n *names) scriptView {
	v := scriptView{
		Pkg:        pkg,
		File:       s.Name + ".lua",
		Go:         n.Go,
		Unexported: n.Unexported,
		Literal:    goLiteral(string(s.Source)),
		ReadOnly:   s.HasFlag("no-writes"),
		HasArgs:    len(s.Args) > 0,
	}
	var params, args, fixed []string
	for i, k := range s.Keys {
		p := n.KeyParams[i]
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
	if v.HasArgs {
		params = append(params, "p "+n.Go+"Params")
		args = append(args, "p")
	}
	v.KeyParams = strings.Join(params, ", ")
	v.KeyArgs = strings.Join(args, ", ")
	seenEnum := map[string]bool{}
	addEnum := func(f Field) {
		typ := n.Enums[f.Name]
		if seenEnum[typ] {
			return
		}
		seenEnum[typ] = true
		ev := enumView{Type: typ, Doc: fmt.Sprintf("%s is the %s of %s: one of %s.", typ, f.Name, v.File, strings.Join(quoteAll(f.Enum), ", "))}
		for _, w := range f.Enum {
			ev.Consts = append(ev.Consts, enumConst{Name: typ + exported(strings.ToLower(w)), Word: w})
		}
		v.Enums = append(v.Enums, ev)
	}
	for i, a := range s.Args {
		fv := newField(a, n.ArgFields[i], n.Enums[a.Name], i, fmt.Sprintf("ARGV[%d]", i+1), true)
		v.Args = append(v.Args, fv)
		if a.Type == Enum {
			addEnum(a)
		}
	}
	for i, r := range s.Returns {
		fv := newField(r, n.ReturnFields[i], n.Enums[r.Name], i, fmt.Sprintf("reply element %d", i+1), false)
		v.Returns = append(v.Returns, fv)
		if r.Type == Enum {
			addEnum(r)
		}
		if r.Variadic {
			v.Rest = true
		} else {
			v.Fixed++
		}
	}
	for _, f := range append(append([]Field{}, s.Args...), s.Returns...) {
		v.NeedTime = v.NeedTime || f.Type.Unit() != 0
	}
	v.Doc = funcDoc(v, s, n)
	return v
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = strconv.Quote(w)
	}
	return out
}

// wireNote says how a value of the field travels, for its doc comment.
func wireNote(f Field, arg bool) string {
	var parts []string
	switch {
	case f.Type.IsDuration() && arg:
		parts = append(parts, "sent in whole "+f.Type.unitName())
	case f.Type.IsDuration():
		parts = append(parts, "in "+f.Type.unitName())
	case f.Type.IsInstant() && arg:
		parts = append(parts, "sent as whole "+f.Type.unitName()+" since the epoch, rounded down; the zero time as 0")
	case f.Type.IsInstant():
		parts = append(parts, f.Type.unitName()+" since the epoch; 0 is the zero time")
	}
	if f.Min != nil || f.Max != nil {
		lo, hi := "", ""
		if f.Min != nil {
			lo = f.Min.Text
		}
		if f.Max != nil {
			hi = f.Max.Text
		}
		parts = append(parts, "["+lo+".."+hi+"]")
	}
	return strings.Join(parts, ", ")
}

func newField(f Field, goName, enumType string, i int, where string, arg bool) fieldView {
	fv := fieldView{Field: goName, GoType: goType(f.Type), Variadic: f.Variadic, name: f.Name, f: f, enumType: enumType, index: i}
	if enumType != "" {
		fv.GoType = enumType
	}
	if f.Variadic {
		fv.GoType = "[]" + fv.GoType
		where += " onwards"
	}
	if note := wireNote(f, arg); note != "" {
		where += ", " + note
	}
	if f.Doc == "" {
		fv.Comment = fmt.Sprintf("%s is %s.", fv.Field, where)
	} else {
		fv.Comment = fmt.Sprintf("%s (%s): %s", fv.Field, where, f.Doc)
	}
	return fv
}

// funcDoc is the doc comment of the call function. Its first sentence is
// the header's summary: "Quota counts a hit..." when the summary starts
// with a verb ("Counts a hit..."), else "Quota: <summary>". Then how it
// runs, its keys, and the errors it can return.
func funcDoc(v scriptView, s *Script, n *names) string {
	var b strings.Builder
	line := func(text string) {
		if text == "" {
			b.WriteString("//\n")
		} else {
			b.WriteString("// " + text + "\n")
		}
	}
	summary := strings.Split(s.Summary, "\n")
	summary[0] = v.Go + " " + lead(summary[0], v.File)
	for _, l := range summary {
		line(l)
	}
	line("")
	how := "It runs " + v.File + " with EVALSHA, falling back to EVAL when the server does not have the script cached."
	if v.ReadOnly {
		how = "It runs " + v.File + " (@flags no-writes) with EVALSHA_RO, falling back to EVAL_RO when the server does not have the script cached, and to EVALSHA/EVAL on servers without the _RO commands (Redis before 7.0)."
	}
	for _, l := range wrap(how+" On a redis.Pipeliner it returns ErrPipeline: queue the call in a Batch instead.", 76) {
		line(l)
	}
	if len(s.Keys) > 0 {
		line("")
		line("Keys:")
		for i, k := range s.Keys {
			text := "  - " + n.KeyParams[i]
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

// lead turns the summary's first line into the rest of a sentence that
// starts with the function's name: a leading verb in the third person
// ("Counts a hit" gives "Quota counts a hit"), also after a label that
// restates the name ("Token bucket: takes" gives "TokenBucket takes");
// anything else follows "runs file.lua:".
func lead(first, file string) string {
	if verb(first, true) {
		r, size := utf8.DecodeRuneInString(first)
		return string(unicode.ToLower(r)) + first[size:]
	}
	if label, rest, ok := strings.Cut(first, ": "); ok && len(strings.Fields(label)) <= 3 && verb(rest, false) {
		return rest
	}
	return "runs " + file + ": " + first
}

// notVerbs end in s but are not verbs.
var notVerbs = map[string]bool{"this": true, "thus": true, "its": true, "was": true, "plus": true, "always": true,
	"perhaps": true, "whereas": true, "his": true, "hers": true, "ours": true, "yours": true, "theirs": true,
	"unless": true, "sometimes": true, "besides": true, "towards": true, "afterwards": true}

// verb reports whether text starts with a word that looks like a verb in
// the third person: "Counts", or "counts" when capital is false.
func verb(text string, capital bool) bool {
	word, _, _ := strings.Cut(text, " ")
	r, size := utf8.DecodeRuneInString(word)
	rest := word[size:]
	if notVerbs[strings.ToLower(word)] {
		return false
	}
	return unicode.IsUpper(r) == capital && unicode.IsLetter(r) && len(word) > 2 &&
		strings.HasSuffix(word, "s") && !strings.HasSuffix(word, "ss") && rest == strings.ToLower(rest)
}

func wrap(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	return append(lines, cur)
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
	Scripts []string // unexported names
	Errors  []errorView
}

type errorView struct {
	Code, Sentinel, Doc string
}

func newSharedView(pkg string, scripts []*Script) sharedView {
	v := sharedView{Pkg: pkg}
	seen := map[string]bool{}
	for _, s := range scripts {
		v.Scripts = append(v.Scripts, unexported(s.Name))
		for _, e := range s.Errors {
			if !seen[e.Code] {
				seen[e.Code] = true
				v.Errors = append(v.Errors, errorView{Code: e.Code, Sentinel: errName(e.Code), Doc: e.Doc})
			}
		}
	}
	sortBy(v.Errors, func(e errorView) string { return e.Code })
	return v
}

type functionsView struct {
	Pkg, Library, File string
	Code               string // the Go expression of the library
	Scripts            []functionView
}

type functionView struct{ Info, Function string }

func newFunctionsView(pkg, library string, scripts []*Script, parts []libraryPart) functionsView {
	v := functionsView{Pkg: pkg, Library: library, File: LibraryFile(library), Code: libraryExpr(parts)}
	for _, s := range scripts {
		v.Scripts = append(v.Scripts, functionView{Info: unexported(s.Name) + "Info", Function: FunctionName(library, s.Name)})
	}
	return v
}

func execute(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return formatGo(buf.Bytes())
}

func formatGo(src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		// A bug in luagen, not in the script: show the source to debug it.
		return nil, fmt.Errorf("luagen bug: generated code does not parse: %v\n%s", err, src)
	}
	return out, nil
}
