package runtime

import "strconv"

// intRange is the [lo..hi] of an integer, duration or instant, in its wire
// unit, and its sentinels (values outside it that mean something else:
// never = -1); nil means any value.
type intRange struct {
	lo, hi       int64
	hasLo, hasHi bool
	also         []int64
}

func atLeast(lo int64) *intRange     { return &intRange{lo: lo, hasLo: true} }
func atMost(hi int64) *intRange      { return &intRange{hi: hi, hasHi: true} }
func between(lo, hi int64) *intRange { return &intRange{lo: lo, hi: hi, hasLo: true, hasHi: true} }

// or returns r that also holds the sentinels vals.
func (r intRange) or(vals ...int64) *intRange {
	r.also = vals
	return &r
}

func (r *intRange) holds(n int64) bool {
	if r == nil || (!r.hasLo || n >= r.lo) && (!r.hasHi || n <= r.hi) {
		return true
	}
	for _, v := range r.also {
		if n == v {
			return true
		}
	}
	return false
}

func (r *intRange) String() string {
	var lo, hi string
	if r.hasLo {
		lo = strconv.FormatInt(r.lo, 10)
	}
	if r.hasHi {
		hi = strconv.FormatInt(r.hi, 10)
	}
	s := "[" + lo + ".." + hi + "]"
	for _, v := range r.also {
		s += " or " + strconv.FormatInt(v, 10)
	}
	return s
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
