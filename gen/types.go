package gen

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Type is the wire type of an @arg or @return.
type Type string

// The header types. Durations travel as integers in their unit, instants as
// integers in their unit since the Unix epoch, enums as one of their words.
const (
	Int     Type = "int"
	Float   Type = "float"
	Bool    Type = "bool"
	String  Type = "string"
	Millis  Type = "ms"
	Micros  Type = "us"
	Seconds Type = "s"
	UnixMs  Type = "unix_ms"
	UnixUs  Type = "unix_us"
	UnixS   Type = "unix_s"
	Enum    Type = "enum"
	// Record is a variadic @arg or @return of groups of fields: ...name
	// (a int, b ms). Field.Fields holds them.
	Record Type = "record"
)

// typeList is every type in the order messages list them.
var typeList = []Type{Int, Float, Bool, String, Millis, Micros, Seconds, UnixMs, UnixUs, UnixS}

const typeWant = "int, float, bool, string, ms, us, s, unix_ms, unix_us, unix_s or enum(a|b)"

func knownType(t Type) bool {
	for _, k := range typeList {
		if k == t {
			return true
		}
	}
	return false
}

// IsDuration reports whether t is one of ms, us, s.
func (t Type) IsDuration() bool { return t == Millis || t == Micros || t == Seconds }

// IsInstant reports whether t is one of unix_ms, unix_us, unix_s.
func (t Type) IsInstant() bool { return t == UnixMs || t == UnixUs || t == UnixS }

// IsInteger reports whether t travels as a decimal integer.
func (t Type) IsInteger() bool { return t == Int || t.IsDuration() || t.IsInstant() }

// Unit is the wire unit of a duration or instant, 0 otherwise.
func (t Type) Unit() time.Duration {
	switch t {
	case Millis, UnixMs:
		return time.Millisecond
	case Micros, UnixUs:
		return time.Microsecond
	case Seconds, UnixS:
		return time.Second
	}
	return 0
}

// unitName is the unit in words: "milliseconds".
func (t Type) unitName() string {
	switch t.Unit() {
	case time.Millisecond:
		return "milliseconds"
	case time.Microsecond:
		return "microseconds"
	case time.Second:
		return "seconds"
	}
	return ""
}

// Bound is one side of a [lo..hi] range, as written and as a number. Int
// holds it for integer types, Float for float.
type Bound struct {
	Text  string
	Int   int64
	Float float64
}

var (
	enumWordRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	intBoundRE = regexp.MustCompile(`^(-?)([0-9]+)(?:e([0-9]+))?$`)
	powBoundRE = regexp.MustCompile(`^(-?)2\^([0-9]+)$`)
)

// parseType reads a type word: int, ms[1..1e11], enum(a|b), unix_us[0..],
// ms[0..]|never=-1, string/^[a-z]{1,8}$/. It returns a message (without
// file:line) when the word is wrong.
func parseType(word string, f *Field) string {
	if rest, ok := strings.CutPrefix(word, "string/"); ok {
		f.Type = String
		return parsePattern(rest, f)
	}
	if base, sentinels, ok := strings.Cut(word, "|"); ok && !strings.HasPrefix(word, "enum") {
		if msg := parseType(base, f); msg != "" {
			return msg
		}
		return parseSentinels(sentinels, f)
	}
	if strings.HasPrefix(word, "enum(") || word == "enum" {
		inner, ok := strings.CutPrefix(word, "enum(")
		if !ok || !strings.HasSuffix(inner, ")") {
			return fmt.Sprintf("enum: write the words in parentheses, separated by |, like enum(smooth|interval); got %q", word)
		}
		inner = strings.TrimSuffix(inner, ")")
		if strings.Contains(inner, "[") || strings.Contains(inner, "(") {
			return fmt.Sprintf("%s: an enum takes no bounds", word)
		}
		seen := map[string]bool{}
		for _, w := range strings.Split(inner, "|") {
			w = strings.TrimSpace(w)
			switch {
			case !enumWordRE.MatchString(w):
				return fmt.Sprintf("enum word %q: use letters, digits, _ and -, starting with a letter or digit", w)
			case seen[w]:
				return fmt.Sprintf("enum word %q is listed twice", w)
			}
			seen[w] = true
			f.Enum = append(f.Enum, w)
		}
		f.Type = Enum
		return ""
	}
	base, bounds, hasBounds := strings.Cut(word, "[")
	if !knownType(Type(base)) {
		return fmt.Sprintf("unknown type %q (want %s)", base, typeWant)
	}
	f.Type = Type(base)
	if !hasBounds {
		return ""
	}
	if !strings.HasSuffix(bounds, "]") || !strings.Contains(bounds, "..") {
		return fmt.Sprintf("bounds %q: write them as %s[lo..hi], either side may be empty, no spaces", "["+bounds, base)
	}
	if !f.Type.IsInteger() && f.Type != Float {
		return fmt.Sprintf("%s cannot have bounds: only numbers, durations and instants can", base)
	}
	lo, hi, _ := strings.Cut(strings.TrimSuffix(bounds, "]"), "..")
	if lo == "" && hi == "" {
		return fmt.Sprintf("bounds %s[..] say nothing: give lo, hi or both", base)
	}
	var msg string
	if f.Min, msg = parseBound(lo, f.Type); msg != "" {
		return msg
	}
	if f.Max, msg = parseBound(hi, f.Type); msg != "" {
		return msg
	}
	if f.Min != nil && f.Max != nil && (f.Type == Float && f.Min.Float > f.Max.Float || f.Type != Float && f.Min.Int > f.Max.Int) {
		return fmt.Sprintf("bounds [%s..%s]: the lower bound is above the upper", lo, hi)
	}
	return ""
}

// parseSentinels reads the name=value|name=value after a type's bounds:
// wire values that mean something other than a number (never = -1,
// server_clock = 0). Only integer types have them.
func parseSentinels(list string, f *Field) string {
	if !f.Type.IsInteger() {
		return fmt.Sprintf("%s cannot have sentinels (|name=value): only int, durations and instants can", f.Type)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(list, "|") {
		name, value, ok := strings.Cut(part, "=")
		switch {
		case !ok || name == "" || value == "":
			return fmt.Sprintf("sentinel %q: write name=value, like never=-1", part)
		case !nameRE.MatchString(name):
			return fmt.Sprintf("sentinel %s: name must be lower case letters, digits and _ (like server_clock)", name)
		case seen[name]:
			return fmt.Sprintf("sentinel %s is listed twice", name)
		}
		seen[name] = true
		b, msg := parseBound(value, Int)
		if msg != "" {
			return "sentinel " + name + ": " + msg
		}
		if f.Type.IsInstant() && b.Int != 0 {
			return fmt.Sprintf("sentinel %s=%s: an instant's sentinel must be 0, which Go sends and reads as the zero time.Time", name, value)
		}
		if (f.Min == nil || b.Int >= f.Min.Int) && (f.Max == nil || b.Int <= f.Max.Int) {
			return fmt.Sprintf("sentinel %s=%s is inside the bounds %s: a sentinel must be a value no ordinary one can be", name, value, boundsText(f.Min, f.Max))
		}
		for _, other := range f.Sentinels {
			if other.Value.Int == b.Int {
				return fmt.Sprintf("sentinels %s and %s are both %s", other.Name, name, value)
			}
		}
		f.Sentinels = append(f.Sentinels, Sentinel{Name: name, Value: *b})
	}
	return ""
}

func boundsText(lo, hi *Bound) string {
	var l, h string
	if lo != nil {
		l = lo.Text
	}
	if hi != nil {
		h = hi.Text
	}
	return "[" + l + ".." + h + "]"
}

// A pattern (string/re/) is read by Go's regexp, Python's re and
// JavaScript's RegExp (with the u flag) alike, so every stack checks the
// same strings: \d, \w, \s differ between them (Python's \d takes every
// Unicode digit), and JavaScript's u flag refuses other escapes, so a \
// may only escape one of these.
const patternEscapes = `^$\.*+?()[]{}|/`

// badEscape returns the first \x of re that is not one of patternEscapes.
func badEscape(re string) string {
	for i := 0; i < len(re); i++ {
		if re[i] != '\\' {
			continue
		}
		if i+1 == len(re) || !strings.ContainsRune(patternEscapes, rune(re[i+1])) {
			return re[i:min(i+2, len(re))]
		}
		i++
	}
	return ""
}

// parsePattern reads the rest of string/re/.
func parsePattern(rest string, f *Field) string {
	re, ok := strings.CutSuffix(rest, "/")
	switch {
	case !ok || re == "":
		return fmt.Sprintf("string/%s: write a pattern as string/re/, like string/^[a-z0-9_-]{1,64}$/, no spaces", rest)
	case badEscape(re) != "":
		return fmt.Sprintf("pattern %s: %s reads differently in Go, Python and JavaScript (or not at all); escape only %s, and write a class such as [0-9] for \\d", re, badEscape(re), patternEscapes)
	case strings.Contains(re, "(?"):
		return fmt.Sprintf("pattern %s: (? groups and flags are not portable; write plain groups and classes", re)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Sprintf("pattern %s: %v", re, err)
	}
	if !strings.HasPrefix(re, "^") || !strings.HasSuffix(re, "$") {
		return fmt.Sprintf("pattern %s: anchor it with ^ and $, so every stack matches the whole string", re)
	}
	f.Pattern = re
	return ""
}

// parseBound reads one side of a range: for integer types a decimal integer,
// an integer times a power of ten (1e9) or a power of two (2^52); for float
// any finite decimal number.
func parseBound(s string, t Type) (*Bound, string) {
	if s == "" {
		return nil, ""
	}
	b := &Bound{Text: s}
	if t == Float {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Sprintf("bound %q is not a finite number", s)
		}
		b.Float = v
		return b, ""
	}
	if m := powBoundRE.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[2])
		if err != nil || n > 62 {
			return nil, fmt.Sprintf("bound %q does not fit in an int64", s)
		}
		b.Int = int64(1) << n
		if m[1] == "-" {
			b.Int = -b.Int
		}
		return b, ""
	}
	m := intBoundRE.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Sprintf("bound %q is not an integer (write 1000, 1e9 or 2^52)", s)
	}
	v, err := strconv.ParseInt(m[2], 10, 64)
	if err == nil && m[3] != "" {
		exp, aerr := strconv.Atoi(m[3])
		if aerr != nil && v != 0 {
			err = aerr
		}
		// v != 0 stops 0e999999999 from looping; an overflow stops the rest.
		for i := 0; i < exp && v != 0 && err == nil; i++ {
			if v > math.MaxInt64/10 {
				err = strconv.ErrRange
			}
			v *= 10
		}
	}
	if err != nil {
		return nil, fmt.Sprintf("bound %q does not fit in an int64", s)
	}
	if m[1] == "-" {
		v = -v
	}
	b.Int = v
	return b, ""
}

// luaKeywords cannot name a local, so they cannot name a key or argument.
// goto is one for gopher-lua (and Lua 5.2), which tests the scripts.
var luaKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
	"false": true, "for": true, "function": true, "goto": true, "if": true, "in": true,
	"local": true, "nil": true, "not": true, "or": true, "repeat": true, "return": true,
	"then": true, "true": true, "until": true, "while": true,
}
