package runtime

import (
	"fmt"
	"math"
	"strconv"
)

// floatRange is the [lo..hi] of a float; nil means any finite value.
type floatRange struct {
	lo, hi       float64
	hasLo, hasHi bool
}

func atLeastF(lo float64) *floatRange { return &floatRange{lo: lo, hasLo: true} }
func atMostF(hi float64) *floatRange  { return &floatRange{hi: hi, hasHi: true} }
func betweenF(lo, hi float64) *floatRange {
	return &floatRange{lo: lo, hi: hi, hasLo: true, hasHi: true}
}

func (r *floatRange) holds(f float64) bool {
	return r == nil || (!r.hasLo || f >= r.lo) && (!r.hasHi || f <= r.hi)
}

func (r *floatRange) String() string {
	var lo, hi string
	if r.hasLo {
		lo = strconv.FormatFloat(r.lo, 'g', -1, 64)
	}
	if r.hasHi {
		hi = strconv.FormatFloat(r.hi, 'g', -1, 64)
	}
	return "[" + lo + ".." + hi + "]"
}

// float sends v in plain decimal: Lua's tonumber in miniredis rejects
// exponents such as 1e-05, and Redis's accepts them, so an exponent would
// make the two disagree.
func (e encoder) float(name string, v float64, r *floatRange) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		e.fail(name, fmt.Sprint(v), "is not a finite number")
	} else if !r.holds(v) {
		e.fail(name, strconv.FormatFloat(v, 'g', -1, 64), "is out of range "+r.String())
	}
	e.cl.addString(strconv.FormatFloat(v, 'f', -1, 64))
}

// float accepts a string (how a script should return a float, since Redis
// truncates Lua numbers), an integer, or a RESP3 double.
func (d *decoder) float(i int, name string, r *floatRange) float64 {
	if d.err != nil {
		return 0
	}
	var f float64
	switch v := d.vals[i].(type) {
	case string:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil {
			d.fail(i, name, "float")
			return 0
		}
	case int64:
		f = float64(v)
	case float64:
		f = v
	default:
		d.fail(i, name, "float")
		return 0
	}
	if !r.holds(f) {
		d.fail(i, name, "a float in "+r.String())
		return 0
	}
	return f
}
