package runtime

import "strconv"

// intRange is the [lo..hi] of an integer, duration or instant, in its wire
// unit; nil means any value.
type intRange struct {
	lo, hi       int64
	hasLo, hasHi bool
}

func atLeast(lo int64) *intRange     { return &intRange{lo: lo, hasLo: true} }
func atMost(hi int64) *intRange      { return &intRange{hi: hi, hasHi: true} }
func between(lo, hi int64) *intRange { return &intRange{lo: lo, hi: hi, hasLo: true, hasHi: true} }

func (r *intRange) holds(n int64) bool {
	return r == nil || (!r.hasLo || n >= r.lo) && (!r.hasHi || n <= r.hi)
}

func (r *intRange) String() string {
	var lo, hi string
	if r.hasLo {
		lo = strconv.FormatInt(r.lo, 10)
	}
	if r.hasHi {
		hi = strconv.FormatInt(r.hi, 10)
	}
	return "[" + lo + ".." + hi + "]"
}

func (e encoder) int(name string, v int64, r *intRange) {
	if !r.holds(v) {
		e.fail(name, strconv.FormatInt(v, 10), "is out of range "+r.String())
	}
	e.cl.addInt(v)
}

// int accepts an integer or a string holding one, since scripts often
// return what redis.call gave them.
func (d *decoder) int(i int, name string, r *intRange) int64 {
	if d.err != nil {
		return 0
	}
	var n int64
	switch v := d.vals[i].(type) {
	case int64:
		n = v
	case string:
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			d.fail(i, name, "int")
			return 0
		}
	default:
		d.fail(i, name, "int")
		return 0
	}
	if !r.holds(n) {
		d.fail(i, name, "an int in "+r.String())
		return 0
	}
	return n
}
