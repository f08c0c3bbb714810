package runtime

import (
	"fmt"
	"strconv"
)

// encoder builds a call's ARGV. It converts every value itself, since
// go-redis would send a time.Duration as nanoseconds, a time.Time as RFC
// 3339 and a float with an exponent. The call stores what it is given
// (addInt, addString) as its client sends it best.
type encoder struct{ cl *call }

func (e encoder) call() *call { return e.cl }

func (e encoder) fail(name, value, reason string) {
	if e.cl.err == nil {
		e.cl.err = &ArgError{Script: e.cl.s.file, Arg: name, Value: value, Reason: reason}
	}
}

// decoder reads a reply element by element: go-redis's slice helpers fail
// on a reply that mixes integers and strings.
type decoder struct {
	info *scriptMeta
	vals []any
	err  error
}

// newDecoder expects an array of n elements, or at least n when rest is
// set. A script with one @return may also reply with the bare value. It
// returns a value, which the generated decoders keep on the stack.
func newDecoder(s *scriptMeta, v any, n int, rest bool) decoder {
	d := decoder{info: s}
	vals, isArray := v.([]any)
	switch {
	case !isArray && n == 1 && !rest:
		d.vals = []any{v}
	case !isArray:
		d.err = &ReplyError{Script: s.file, Want: "an array", Got: describe(v)}
	case rest && len(vals) < n:
		d.err = &ReplyError{Script: s.file, Want: fmt.Sprintf("at least %d elements", n), Got: fmt.Sprintf("%d", len(vals))}
	case !rest && len(vals) != n:
		d.err = &ReplyError{Script: s.file, Want: fmt.Sprintf("%d elements", n), Got: fmt.Sprintf("%d", len(vals))}
	default:
		d.vals = vals
	}
	return d
}

func (d *decoder) fail(i int, name, want string) {
	if d.err == nil {
		d.err = &ReplyError{Script: d.info.file, Element: i + 1, Name: name, Want: want, Got: describe(d.vals[i])}
	}
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case string:
		return "string " + strconv.Quote(v)
	case []any:
		return fmt.Sprintf("an array of %d elements", len(v))
	}
	return fmt.Sprintf("%T %v", v, v)
}
