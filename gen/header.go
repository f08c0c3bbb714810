package gen

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Field is one @key, @arg or @return. Keys have no Type.
type Field struct {
	Name     string
	Type     Type
	Enum     []string // the words of an enum(a|b)
	Min, Max *Bound   // the bounds of type[lo..hi]; nil for an open side
	Doc      string
	Variadic bool // written as ...name: the rest of KEYS, ARGV or the reply
	Line     int
}

// ErrorCode is one @error.
type ErrorCode struct {
	Code string
	Doc  string
	Line int
}

// Script is a parsed, checked script.
type Script struct {
	Name    string // file name without .lua, e.g. "token_bucket"
	File    string // path as given, used in messages
	Summary string // free text lines of the header, joined by newlines
	Keys    []Field
	Args    []Field
	Returns []Field
	Errors  []ErrorCode
	Flags   []string
	Source  []byte
	Shebang bool // the first line is #!lua ...
	// ShebangFlags are the flags= words of the #! line.
	ShebangFlags []string
}

// HasFlag reports whether the header lists flag in @flags.
func (s *Script) HasFlag(flag string) bool {
	for _, f := range s.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Redis's script flags (the #!lua flags= words).
var knownFlags = map[string]bool{
	"no-writes": true, "allow-oom": true, "allow-stale": true,
	"no-cluster": true, "allow-cross-slot-keys": true,
}

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	codeRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// cut splits off the first space-separated word of s.
func cut(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], strings.TrimSpace(s[i:])
	}
	return s, ""
}

// parseHeader reads the leading --- lines of src into s. It returns the
// number of the first body line.
func parseHeader(s *Script, lines []string, r *reporter) {
	start := 0
	if len(lines) > 0 && strings.HasPrefix(lines[0], "#!") {
		s.Shebang = true
		start = 1
		parseShebang(s, lines[0], r)
	}
	var summary []string
	seen := map[string]int{} // key and arg names share the script's scope
	seenRet := map[string]int{}
	seenCode := map[string]int{}
	tagged := false
	end := start
	for i := start; i < len(lines) && strings.HasPrefix(lines[i], "---"); i++ {
		end = i + 1
		line := i + 1
		if !utf8.ValidString(lines[i]) || strings.ContainsAny(lines[i], "\x00\ufeff") {
			// The header goes into Go comments, which must be UTF-8 without
			// NUL or a byte order mark, and into the JSON manifest.
			r.errorf(line, "header line is not valid UTF-8, or holds NUL or a byte order mark; Go comments cannot hold it")
			continue
		}
		text := strings.TrimSpace(strings.TrimPrefix(lines[i], "---"))
		if !strings.HasPrefix(text, "@") {
			if tagged && text != "" {
				r.errorf(line, "summary text after the first tag; put the summary before @key, @arg and @return")
				continue
			}
			if !tagged {
				summary = append(summary, text)
			}
			continue
		}
		tagged = true
		tag, rest := cut(text)
		switch tag {
		case "@key", "@arg", "@return":
			f, ok := parseField(tag, rest, line, r)
			if !ok {
				continue
			}
			names := seen
			if tag == "@return" {
				names = seenRet
			}
			if first, dup := names[f.Name]; dup {
				r.errorf(line, "%s %s: name already declared at line %d", tag, f.Name, first)
				continue
			}
			names[f.Name] = line
			switch tag {
			case "@key":
				s.Keys = append(s.Keys, f)
			case "@arg":
				s.Args = append(s.Args, f)
			default:
				s.Returns = append(s.Returns, f)
			}
		case "@error":
			code, doc := cut(rest)
			switch {
			case code == "":
				r.errorf(line, "@error: missing code")
			case !codeRE.MatchString(code):
				r.errorf(line, "@error %s: code must be upper case letters, digits and _ (like BADARG)", code)
			case seenCode[code] != 0:
				r.errorf(line, "@error %s: already declared at line %d", code, seenCode[code])
			default:
				seenCode[code] = line
				s.Errors = append(s.Errors, ErrorCode{Code: code, Doc: doc, Line: line})
			}
		case "@flags":
			if rest == "" {
				r.errorf(line, "@flags: missing flags")
			}
			for _, f := range strings.FieldsFunc(rest, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
				if !knownFlags[f] {
					r.errorf(line, "@flags: unknown flag %q (want no-writes, allow-oom, allow-stale, no-cluster or allow-cross-slot-keys)", f)
					continue
				}
				s.Flags = append(s.Flags, f)
			}
		default:
			r.errorf(line, "unknown tag %q (want @key, @arg, @return, @error or @flags)", tag)
		}
	}

	// Trim blank lines around the summary but keep paragraph breaks inside it.
	for len(summary) > 0 && summary[0] == "" {
		summary = summary[1:]
	}
	for len(summary) > 0 && summary[len(summary)-1] == "" {
		summary = summary[:len(summary)-1]
	}
	s.Summary = strings.Join(summary, "\n")

	first := min(start+1, len(lines)) // a file of one #! line has no line 2
	switch {
	case end == start:
		r.errorf(first, "missing header: a script starts with --- comment lines (summary, @key, @arg, @return)")
		return
	case s.Summary == "":
		r.errorf(first, "header has no summary: start it with a line saying what the script does")
	}
	if len(s.Returns) == 0 {
		r.errorf(end, "header declares no @return")
	}
	checkVariadic("@key", s.Keys, r)
	checkVariadic("@arg", s.Args, r)
	checkVariadic("@return", s.Returns, r)
	if s.Shebang && !sameSet(s.ShebangFlags, s.Flags) {
		r.errorf(1, "#! line says flags=%s but @flags says %s: Redis reads the #! line, luagen and other stacks read @flags; list the same flags in both",
			orNone(s.ShebangFlags), orNone(s.Flags))
	}
}

// sameSet reports whether a and b hold the same words, in any order.
func sameSet(a, b []string) bool {
	in := map[string]int{}
	for _, x := range a {
		in[x] |= 1
	}
	for _, x := range b {
		in[x] |= 2
	}
	for _, v := range in {
		if v != 3 {
			return false
		}
	}
	return true
}

func orNone(fs []string) string {
	if len(fs) == 0 {
		return "(none)"
	}
	return strings.Join(fs, ",")
}

func parseField(tag, rest string, line int, r *reporter) (Field, bool) {
	f := Field{Line: line}
	name, rest := cut(rest)
	if strings.HasPrefix(name, "...") {
		f.Variadic = true
		name = strings.TrimPrefix(name, "...")
	}
	if name == "" {
		r.errorf(line, "%s: missing name", tag)
		return f, false
	}
	if !nameRE.MatchString(name) {
		r.errorf(line, "%s %s: name must be lower case letters, digits and _ (like retry_after)", tag, name)
		return f, false
	}
	if tag != "@return" && luaKeywords[name] {
		r.errorf(line, "%s %s: %s is a Lua keyword, so no local can bind it; rename it (like %s_%s)", tag, name, name, name, strings.TrimPrefix(tag, "@"))
		return f, false
	}
	f.Name = name
	if tag == "@key" {
		f.Doc = rest
		return f, true
	}
	typ, doc := cut(rest)
	// enum(a | b) may be written with spaces around the bars.
	if strings.HasPrefix(typ, "enum(") && !strings.Contains(typ, ")") {
		if end := strings.Index(rest, ")"); end >= 0 {
			typ, doc = strings.ReplaceAll(rest[:end+1], " ", ""), strings.TrimSpace(rest[end+1:])
		}
	}
	if typ == "" {
		r.errorf(line, "%s %s: missing type (want %s)", tag, name, typeWant)
		return f, false
	}
	if msg := parseType(typ, &f); msg != "" {
		r.errorf(line, "%s %s: %s", tag, name, msg)
		return f, false
	}
	f.Doc = doc
	return f, true
}

// parseShebang reads "#!lua" and "#!lua flags=a,b", the only forms Redis
// accepts for a script.
func parseShebang(s *Script, first string, r *reporter) {
	words := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(words) == 0 || words[0] != "lua" {
		r.errorf(1, "#! line: Redis accepts only #!lua, optionally followed by flags=a,b")
		return
	}
	for _, w := range words[1:] {
		v, ok := strings.CutPrefix(w, "flags=")
		if !ok {
			r.errorf(1, "#! line: unknown option %q: Redis accepts only flags=a,b on a script's #!lua line", w)
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if f == "" {
				continue
			}
			if !knownFlags[f] {
				r.errorf(1, "#! line: unknown flag %q (want no-writes, allow-oom, allow-stale, no-cluster or allow-cross-slot-keys)", f)
				continue
			}
			s.ShebangFlags = append(s.ShebangFlags, f)
		}
	}
}

// checkVariadic allows ... only on the last field of a kind.
func checkVariadic(tag string, fs []Field, r *reporter) {
	for i, f := range fs[:max(len(fs)-1, 0)] {
		if f.Variadic {
			r.errorf(f.Line, "%s ...%s: only the last %s can be variadic", tag, f.Name, tag)
			fs[i].Variadic = false
		}
	}
}
