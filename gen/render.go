package gen

import (
	"bytes"
	"crypto/sha1"
	"embed"
	"encoding/hex"
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
	Client                    clientKind
	Hash                      string // the script's SHA1, for clients that need it written out
	Literal                   string
	Doc                       string
	ReadOnly                  bool
	KeyParams, KeyArgs        string
	KeysPrelude               []string // statements that build keys
	KeysExpr                  string
	EncodeLines               []string // statements that encode the arguments
	HasArgs                   bool
	Args, Returns             []fieldView
	Enums                     []enumView
	Records                   []recordView
	Consts                    []constView
	Patterns                  []patternView
	Fixed                     int
	Rest                      bool
	NeedTime, NeedRegexp      bool
}

type enumView struct {
	Type, Doc string
	Consts    []enumConst
}

type enumConst struct{ Name, Word string }

// recordView is the Go struct of a record variadic.
type recordView struct {
	Type, Doc string
	Fields    []fieldView
}

// constView is the Go constant of a sentinel.
type constView struct{ Name, Type, Value, Doc string }

// patternView is the compiled regexp of a string/re/ field.
type patternView struct{ Name, Literal string }

type fieldView struct {
	Field, GoType, Comment string
	Variadic               bool
	name                   string
	f                      Field
	enumType               string
	index                  int         // 0-based position in ARGV or the reply
	record                 string      // the Go type of a record variadic
	sub                    []fieldView // its fields
	consts                 []string    // the Go constants of its sentinels, as name (value)
	pattern                string      // the regexp variable of its pattern
}

func intRangeExpr(lo, hi *Bound) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("between(%d, %d)", lo.Int, hi.Int)
	case lo != nil:
		return fmt.Sprintf("atLeast(%d)", lo.Int)
	case hi != nil:
		return fmt.Sprintf("atMost(%d)", hi.Int)
	}
	return "nil"
}

// rangeExpr is the Go expression of a field's bounds: nil, atLeast(lo),
// atMost(hi) or between(lo, hi), with .or(v...) for its sentinels.
func (f fieldView) rangeExpr() string {
	lo, hi := f.f.Min, f.f.Max
	if f.f.Type != Float {
		r := intRangeExpr(lo, hi)
		if len(f.f.Sentinels) > 0 {
			var vals []string
			for _, s := range f.f.Sentinels {
				vals = append(vals, strconv.FormatInt(s.Value.Int, 10))
			}
			r += ".or(" + strings.Join(vals, ", ") + ")"
		}
		return r
	}
	num := func(b *Bound) string { return strconv.FormatFloat(b.Float, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("betweenF(%s, %s)", num(lo), num(hi))
	case lo != nil:
		return fmt.Sprintf("atLeastF(%s)", num(lo))
	case hi != nil:
		return fmt.Sprintf("atMostF(%s)", num(hi))
	}
	return "nil"
}

// countExpr is the range of how many values or records a variadic takes.
func (f fieldView) countExpr() string { return intRangeExpr(f.f.MinCount, f.f.MaxCount) }

func (f fieldView) words() string {
	var q []string
	for _, w := range f.f.Enum {
		q = append(q, strconv.Quote(w))
	}
	return strings.Join(q, ", ")
}

// Encode is the statement that appends the argument held in expr.
func (f fieldView) Encode(expr string) string {
	switch {
	case f.pattern != "":
		return fmt.Sprintf("e.pattern(%q, %s, %s)", f.name, expr, f.pattern)
	case f.f.Type == Bool || f.f.Type == String:
		return fmt.Sprintf("e.%s(%s)", method(f.f.Type), expr)
	case f.f.Type == Enum:
		return fmt.Sprintf("e.enum(%q, string(%s), %s)", f.name, expr, f.words())
	}
	return fmt.Sprintf("e.%s(%q, %s, %s)", method(f.f.Type), f.name, expr, f.rangeExpr())
}

// encodeLines are the statements that encode an @arg from p.
func (f fieldView) encodeLines() []string {
	if !f.Variadic {
		return []string{f.Encode("p." + f.Field)}
	}
	var out []string
	what := "values"
	if f.record != "" {
		what = "records"
	}
	if f.f.MinCount != nil || f.f.MaxCount != nil {
		out = append(out, fmt.Sprintf("e.count(%q, %q, len(p.%s), %s)", f.name, what, f.Field, f.countExpr()))
	}
	loop := "for _, v := range p." + f.Field + " {"
	if f.record == "" {
		return append(out, loop, "\t"+f.Encode("v"), "}")
	}
	out = append(out, loop)
	for _, sub := range f.sub {
		out = append(out, "\t"+sub.Encode("v."+sub.Field))
	}
	return append(out, "}")
}

// decodeOne is the expression that reads element i (an expression) of the
// reply from the decoder d.
func (f fieldView) decodeOne(i string) string {
	switch {
	case f.pattern != "":
		return fmt.Sprintf("d.pattern(%s, %q, %s)", i, f.name, f.pattern)
	case f.f.Type == Bool || f.f.Type == String:
		return fmt.Sprintf("d.%s(%s, %q)", method(f.f.Type), i, f.name)
	case f.f.Type == Enum:
		return fmt.Sprintf("%s(d.enum(%s, %q, %s))", f.enumType, i, f.name, f.words())
	}
	return fmt.Sprintf("d.%s(%s, %q, %s)", method(f.f.Type), i, f.name, f.rangeExpr())
}

// Decode is the expression that reads the field from the decoder d.
func (f fieldView) Decode() string {
	if !f.Variadic {
		return f.decodeOne(strconv.Itoa(f.index))
	}
	if f.record == "" {
		elem := goType(f.f.Type)
		if f.enumType != "" {
			elem = f.enumType
		}
		return fmt.Sprintf("rest(&d, %d, 1, %q, %s, func(i int) %s { return %s })", f.index, f.name, f.countExpr(), elem, f.decodeOne("i"))
	}
	var fields []string
	for k, sub := range f.sub {
		i := "i"
		if k > 0 {
			i = fmt.Sprintf("i+%d", k)
		}
		fields = append(fields, sub.Field+": "+sub.decodeOne(i))
	}
	return fmt.Sprintf("rest(&d, %d, %d, %q, %s, func(i int) %s { return %s{%s} })", f.index, len(f.sub), f.name, f.countExpr(),
		f.record, f.record, strings.Join(fields, ", "))
}

func newScriptView(pkg string, client clientKind, s *Script, n *names) scriptView {
	sum := sha1.Sum(s.Source)
	v := scriptView{
		Pkg:        pkg,
		Client:     client,
		Hash:       hex.EncodeToString(sum[:]),
		File:       s.Name + ".lua",
		Go:         n.Go,
		Unexported: n.Unexported,
		Literal:    goLiteral(string(s.Source)),
		ReadOnly:   s.HasFlag("no-writes"),
		HasArgs:    len(s.Args) > 0,
	}
	seenRecord := map[string]bool{}
	addRecord := func(fv fieldView, tag string) {
		if seenRecord[fv.record] {
			return
		}
		seenRecord[fv.record] = true
		rv := recordView{Type: fv.record, Fields: fv.sub,
			Doc: fmt.Sprintf("%s is one record of %s %s of %s: its fields travel in this order, record after record.", fv.record, tag, fv.name, v.File)}
		v.Records = append(v.Records, rv)
	}
	seenConst, seenPattern := map[string]bool{}, map[string]bool{}
	addGrammar := func(fv fieldView, path, owner string) {
		for _, sen := range fv.f.Sentinels {
			name := n.Consts[path+" "+sen.Name]
			if name == "" || seenConst[name] {
				continue
			}
			seenConst[name] = true
			cv := constView{Name: name, Type: goType(fv.f.Type), Value: strconv.FormatInt(sen.Value.Int, 10),
				Doc: fmt.Sprintf("%s is the %s that means %s (%d on the wire).", name, owner, strings.ReplaceAll(sen.Name, "_", " "), sen.Value.Int)}
			if u := fv.f.Type.Unit(); u != 0 {
				cv.Value = fmt.Sprintf("%d * time.%s", sen.Value.Int, map[string]string{"ms": "Millisecond", "us": "Microsecond", "s": "Second"}[string(fv.f.Type)])
				v.NeedTime = true
			}
			v.Consts = append(v.Consts, cv)
		}
		if fv.pattern != "" && !seenPattern[fv.pattern] {
			seenPattern[fv.pattern] = true
			v.Patterns = append(v.Patterns, patternView{Name: fv.pattern, Literal: strconv.Quote("^(?:" + fv.f.Pattern + ")$")})
			v.NeedRegexp = true
		}
	}
	build := func(tag string, f Field, goName string, i int, where string, arg bool) fieldView {
		path := tag + " " + f.Name
		fv := newField(f, goName, n.Enums[f.Name], i, where, arg, n, path)
		if fv.record != "" {
			for k, sub := range f.Fields {
				sv := newField(sub, exported(sub.Name), "", k, fmt.Sprintf("field %d of each record", k+1), arg, n, path+" "+sub.Name)
				if tag == "@key" {
					sv.GoType = "string"
					sv.Comment = fmt.Sprintf("%s is the key in field %d of each record.", sv.Field, k+1)
				}
				fv.sub = append(fv.sub, sv)
				addGrammar(sv, path+" "+sub.Name, fv.record+"."+sv.Field)
			}
			addRecord(fv, tag)
		} else {
			owner := v.Go + "Result." + goName
			if arg {
				owner = v.Go + "Params." + goName
			}
			addGrammar(fv, path, owner)
		}
		return fv
	}

	var params, args, fixed []string
	for i, k := range s.Keys {
		p := n.KeyParams[i]
		args = append(args, p)
		if !k.Variadic {
			params = append(params, p+" string")
			fixed = append(fixed, p)
			continue
		}
		fv := build("@key", k, p, i, "", true)
		what := "keys"
		if fv.record != "" {
			what = "records"
			params = append(params, p+" []"+fv.record)
			v.KeysPrelude = append(v.KeysPrelude, fmt.Sprintf("v := make([]string, 0, %d+%d*len(%s))", len(fixed), len(fv.sub), p))
			if len(fixed) > 0 {
				v.KeysPrelude = append(v.KeysPrelude, fmt.Sprintf("v = append(v, %s)", strings.Join(fixed, ", ")))
			}
			v.KeysPrelude = append(v.KeysPrelude, fmt.Sprintf("for _, r := range %s {", p))
			var subs []string
			for _, sub := range fv.sub {
				subs = append(subs, "r."+sub.Field)
			}
			v.KeysPrelude = append(v.KeysPrelude, "\tv = append(v, "+strings.Join(subs, ", ")+")", "}")
			v.KeysExpr = "v" // a key parameter is never v (localNames)
		} else {
			params = append(params, p+" []string")
			if len(fixed) == 0 {
				v.KeysExpr = p
			} else {
				v.KeysExpr = fmt.Sprintf("append([]string{%s}, %s...)", strings.Join(fixed, ", "), p)
			}
		}
		if k.MinCount != nil || k.MaxCount != nil {
			v.EncodeLines = append(v.EncodeLines, fmt.Sprintf("e.count(%q, %q, len(%s), %s)", k.Name, what, p, fv.countExpr()))
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
		fv := build("@arg", a, n.ArgFields[i], i, fmt.Sprintf("ARGV[%d]", i+1), true)
		v.Args = append(v.Args, fv)
		v.EncodeLines = append(v.EncodeLines, fv.encodeLines()...)
		if a.Type == Enum {
			addEnum(a)
		}
	}
	for i, r := range s.Returns {
		fv := build("@return", r, n.ReturnFields[i], i, fmt.Sprintf("reply element %d", i+1), false)
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
	each(s, func(f Field) { v.NeedTime = v.NeedTime || f.Type.Unit() != 0 })
	v.Doc = funcDoc(v, s, n)
	return v
}

// each calls fn for every @arg and @return of s, and every field of their
// records.
func each(s *Script, fn func(Field)) {
	for _, f := range append(append([]Field{}, s.Args...), s.Returns...) {
		fn(f)
		for _, sub := range f.Fields {
			fn(sub)
		}
	}
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = strconv.Quote(w)
	}
	return out
}

// wireNote says how a value of the field travels, for its doc comment.
func wireNote(f Field, arg bool, consts []string) string {
	var parts []string
	zero := "0"
	for _, s := range f.Sentinels {
		if f.Type.IsInstant() { // an instant's sentinel is 0, the zero time
			zero = "0 (" + strings.ReplaceAll(s.Name, "_", " ") + ")"
		}
	}
	switch {
	case f.Type.IsDuration() && arg:
		parts = append(parts, "sent in whole "+f.Type.unitName())
	case f.Type.IsDuration():
		parts = append(parts, "in "+f.Type.unitName())
	case f.Type.IsInstant() && arg:
		parts = append(parts, "sent as whole "+f.Type.unitName()+" since the epoch, rounded down; the zero time as "+zero)
	case f.Type.IsInstant():
		parts = append(parts, f.Type.unitName()+" since the epoch; "+zero+" is the zero time")
	}
	if f.Min != nil || f.Max != nil {
		parts = append(parts, boundsText(f.Min, f.Max))
	}
	if len(consts) > 0 {
		parts = append(parts, "or "+strings.Join(consts, " or "))
	}
	if f.Pattern != "" {
		parts = append(parts, "matching "+f.Pattern)
	}
	if f.MinCount != nil || f.MaxCount != nil {
		parts = append(parts, boundsText(f.MinCount, f.MaxCount)+" of them")
	}
	return strings.Join(parts, ", ")
}

func newField(f Field, goName, enumType string, i int, where string, arg bool, n *names, path string) fieldView {
	fv := fieldView{Field: goName, GoType: goType(f.Type), Variadic: f.Variadic, name: f.Name, f: f, enumType: enumType, index: i,
		record: n.Records[path], pattern: n.Patterns[path]}
	if enumType != "" {
		fv.GoType = enumType
	}
	if fv.record != "" {
		fv.GoType = fv.record
	}
	for _, sen := range f.Sentinels {
		if c := n.Consts[path+" "+sen.Name]; c != "" {
			fv.consts = append(fv.consts, c)
		}
	}
	if f.Variadic {
		fv.GoType = "[]" + fv.GoType
		if where != "" {
			where += " onwards"
		}
	}
	if note := wireNote(f, arg, fv.consts); note != "" {
		if where != "" {
			where += ", "
		}
		where += note
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
	if v.Client.files == nil {
		how += " On a redis.Pipeliner it returns ErrPipeline: queue the call in a Batch instead."
	} else {
		how += " To send many calls in one round trip, queue them in a Batch."
	}
	for _, l := range wrap(how, 76) {
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
	// Multi are the scripts with @multi, for MultiKeyForm (go-redis only).
	Multi                   []multiView
	MultiBefore, MultiAfter string
}

// multiView is a script with @multi: its Go name and unexported name, and
// whether it takes its form itself.
type multiView struct {
	Go, Unexported string
	Itself         bool
}

type errorView struct {
	Code, Sentinel, Doc string
}

func newSharedView(pkg string, client clientKind, scripts []*Script, all []*names) sharedView {
	v := sharedView{Pkg: pkg, MultiBefore: goLiteral(multiBefore), MultiAfter: goLiteral(multiAfter)}
	seen := map[string]bool{}
	for i, s := range scripts {
		v.Scripts = append(v.Scripts, unexported(s.Name))
		if s.Multi && client.files == nil {
			v.Multi = append(v.Multi, multiView{Go: all[i].Go, Unexported: all[i].Unexported, Itself: s.MultiItself})
		}
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
