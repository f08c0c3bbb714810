package gen

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Field is one @key, @arg or @return, or one field of a record. Keys have
// no Type.
type Field struct {
	Name      string
	Type      Type
	Enum      []string   // the words of an enum(a|b)
	Min, Max  *Bound     // the bounds of type[lo..hi]; nil for an open side
	Sentinels []Sentinel // type|name=value: values that mean something else, besides the bounds
	Pattern   string     // string/re/: a regular expression the whole string matches
	Doc       string
	Variadic  bool // written as ...name: the rest of KEYS, ARGV or the reply
	// MinCount and MaxCount bound how many values (or records) a variadic
	// takes: ...name[1..16]. nil for an open side.
	MinCount, MaxCount *Bound
	// Fields are a record's: ...name (a int, b ms) takes the rest of
	// KEYS, ARGV or the reply as consecutive groups of them. Type is
	// Record for an @arg or @return.
	Fields []Field
	Line   int
}

// Sentinel is one name=value of a type: a wire value outside the bounds
// that means something else (never = -1, server_clock = 0).
type Sentinel struct {
	Name  string
	Value Bound
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
	// Multi is set by @multi: luagen also gives the script's multi-key
	// form (multi.go), one call that runs up to MultiCalls calls of it.
	Multi bool
	// MultiItself is set by "@multi itself": sent 2 or more keys, the
	// script takes its multi-key form's layout itself and answers as the
	// form would, at less cost (no copies of each call's KEYS and ARGV, no
	// pcall). luagen cannot check the body keeps that promise; the
	// script's tests must (tests/lua does for the bundled scripts).
	MultiItself bool
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
	multiLine := 0 // the @multi line, for its errors
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
		case "@multi":
			multiLine = line
			if s.Multi {
				r.errorf(line, "@multi: already declared")
			}
			s.Multi = true
			if w, _ := cut(rest); strings.TrimSuffix(w, ":") == "itself" {
				s.MultiItself = true
			}
			if s.Shebang {
				r.errorf(line, "@multi: a script with a #! line has no multi-key form (its flags would have to lead the form's text); drop one or the other")
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
			r.errorf(line, "unknown tag %q (want @key, @arg, @return, @error, @flags or @multi)", tag)
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
	if s.MultiItself && takesKeys(s.Keys, 2) {
		r.errorf(multiLine, "@multi itself: the script's own layout takes 2 or more keys, and 2 or more keys are the multi-key form's layout; drop itself")
	}
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
		if base, count, ok := strings.Cut(name, "["); ok {
			name = base
			if msg := parseCount("["+count, &f); msg != "" {
				r.errorf(line, "%s ...%s: %s", tag, name, msg)
				return f, false
			}
		}
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
	if strings.HasPrefix(rest, "(") {
		if !f.Variadic {
			r.errorf(line, "%s %s: only a variadic (...%s) can be a record", tag, name, name)
			return f, false
		}
		end := closing(rest)
		if end < 0 {
			r.errorf(line, "%s ...%s: the record's fields have no closing ): write (a int, b ms)", tag, name)
			return f, false
		}
		fields, msg := parseRecord(tag, rest[1:end])
		if msg != "" {
			r.errorf(line, "%s ...%s: %s", tag, name, msg)
			return f, false
		}
		f.Fields, f.Doc = fields, strings.TrimSpace(rest[end+1:])
		if tag != "@key" {
			f.Type = Record
		}
		return f, true
	}
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

// parseRecord reads a record's fields: "a int, b ms[1..]" for an @arg or
// @return, "a, b" for an @key.
func parseRecord(tag, list string) ([]Field, string) {
	var fields []Field
	seen := map[string]bool{}
	goNames := map[string]string{}
	for _, part := range splitTop(list) {
		name, typ := cut(part)
		var f Field
		switch {
		case name == "":
			return nil, "a record field has no name: write (a int, b ms)"
		case !nameRE.MatchString(name):
			return nil, fmt.Sprintf("record field %s: name must be lower case letters, digits and _", name)
		case seen[name]:
			return nil, fmt.Sprintf("record field %s is listed twice", name)
		case tag == "@key" && typ != "":
			return nil, fmt.Sprintf("record field %s: a key has no type (write (a, b))", name)
		case tag != "@key" && typ == "":
			return nil, fmt.Sprintf("record field %s: missing type (want %s)", name, typeWant)
		case strings.ContainsAny(typ, " \t"):
			return nil, fmt.Sprintf("record field %s: %q: one type word per field, no spaces and no doc", name, typ)
		}
		if prev, ok := goNames[exported(name)]; ok {
			return nil, fmt.Sprintf("record fields %s and %s are both %s in Go; rename one", prev, name, exported(name))
		}
		seen[name] = true
		goNames[exported(name)] = name
		f.Name = name
		if typ != "" {
			if msg := parseType(typ, &f); msg != "" {
				return nil, fmt.Sprintf("record field %s: %s", name, msg)
			}
			if f.Type == Enum {
				return nil, fmt.Sprintf("record field %s: an enum cannot be a record field; write string (or a pattern, string/^(a|b)$/)", name)
			}
		}
		fields = append(fields, f)
	}
	if len(fields) < 2 {
		return nil, "a record needs two fields or more; a variadic of one type needs no parentheses"
	}
	return fields, ""
}

// closing returns the index of the ) that closes the ( at s[0], counting
// the brackets of types and patterns inside (enum(a|b), [1..9], {1,64}),
// or -1.
func closing(s string) int {
	depth := 0
	for i, c := range s {
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				if c != ')' {
					return -1
				}
				return i
			}
		}
	}
	return -1
}

// splitTop splits a record's field list at the commas outside brackets, so
// a pattern's {1,64} stays whole.
func splitTop(list string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range list {
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, list[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, list[start:])
}

// parseCount reads the [lo..hi] after a variadic's name: how many values
// (or records) it takes.
func parseCount(word string, f *Field) string {
	if !strings.HasSuffix(word, "]") || !strings.Contains(word, "..") {
		return fmt.Sprintf("count %q: write how many as ...name[lo..hi], either side may be empty, no spaces", word)
	}
	lo, hi, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(word, "["), "]"), "..")
	if lo == "" && hi == "" {
		return "count [..] says nothing: give lo, hi or both"
	}
	var msg string
	if f.MinCount, msg = parseBound(lo, Int); msg != "" {
		return "count: " + msg
	}
	if f.MaxCount, msg = parseBound(hi, Int); msg != "" {
		return "count: " + msg
	}
	switch {
	case f.MinCount != nil && f.MinCount.Int < 0:
		return fmt.Sprintf("count [%s..%s]: a count is never negative", lo, hi)
	case f.MinCount != nil && f.MaxCount != nil && f.MinCount.Int > f.MaxCount.Int:
		return fmt.Sprintf("count [%s..%s]: the lower bound is above the upper", lo, hi)
	case f.MaxCount != nil && f.MaxCount.Int < 1:
		return fmt.Sprintf("count [%s..%s]: the upper bound must be 1 or more", lo, hi)
	}
	return ""
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

// takesKeys reports whether the @key fields let a call send n keys.
func takesKeys(keys []Field, n int64) bool {
	if len(keys) >= int(n) {
		return true
	}
	k := len(keys) - 1
	return k >= 0 && keys[k].Variadic && (keys[k].MaxCount == nil || int64(k)+keys[k].MaxCount.Int >= n)
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
