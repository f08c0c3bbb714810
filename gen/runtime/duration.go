package runtime

import (
	"math"
	"time"
)

// duration sends v as an integer in unit. A v that is not a whole number of
// units is an *ArgError rather than silently rounded: rounding either way
// would change what a limit means.
func (e encoder) duration(name string, v, unit time.Duration, units string, r *intRange) {
	if v%unit != 0 {
		e.fail(name, v.String(), "is not a whole number of "+units)
	}
	n := int64(v / unit)
	if !r.holds(n) {
		e.fail(name, v.String(), "is out of range "+r.String()+" "+units)
	}
	e.cl.addInt(n)
}

func (e encoder) ms(name string, v time.Duration, r *intRange) {
	e.duration(name, v, time.Millisecond, "milliseconds", r)
}

func (e encoder) us(name string, v time.Duration, r *intRange) {
	e.duration(name, v, time.Microsecond, "microseconds", r)
}

func (e encoder) seconds(name string, v time.Duration, r *intRange) {
	e.duration(name, v, time.Second, "seconds", r)
}

// duration reads an integer in unit. One too large for a time.Duration
// (about 292 years) is a *ReplyError, never a wrapped-around value.
func (d *decoder) duration(i int, name string, unit time.Duration, units string, r *intRange) time.Duration {
	n := d.int(i, name, r)
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		d.fail(i, name, "a number of "+units+" that fits a time.Duration")
		return 0
	}
	return time.Duration(n) * unit
}

func (d *decoder) ms(i int, name string, r *intRange) time.Duration {
	return d.duration(i, name, time.Millisecond, "milliseconds", r)
}

func (d *decoder) us(i int, name string, r *intRange) time.Duration {
	return d.duration(i, name, time.Microsecond, "microseconds", r)
}

func (d *decoder) seconds(i int, name string, r *intRange) time.Duration {
	return d.duration(i, name, time.Second, "seconds", r)
}
