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

// parseType reads a type word: int, ms[1..1e11], enum(a|b), unix_us[0..].
// It returns a message (without file:line) when the word is wrong.
func parseType(word string, f *Field) string {
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
