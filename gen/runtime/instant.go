package runtime

import (
	"math"
	"time"
)

// instant sends t as whole units since the Unix epoch, rounded down as a
// clock of that resolution reads it, and the zero time.Time as 0 (scripts
// read 0 as "use the server's clock").
func (e encoder) instant(name string, t time.Time, unit time.Duration, units string, r *intRange) {
	var n int64
	if !t.IsZero() {
		per := int64(time.Second / unit)
		sec := t.Unix()
		if sec >= math.MaxInt64/per || sec <= math.MinInt64/per {
			e.fail(name, t.Format(time.RFC3339Nano), "does not fit an int64 of "+units+" since the epoch")
			return
		}
		n = sec*per + int64(t.Nanosecond())/int64(unit)
	}
	if !r.holds(n) {
		e.fail(name, t.Format(time.RFC3339Nano), "is out of range "+r.String()+" "+units+" since the epoch")
	}
	e.cl.addInt(n)
}

func (e encoder) unixMs(name string, t time.Time, r *intRange) {
	e.instant(name, t, time.Millisecond, "milliseconds", r)
}

func (e encoder) unixUs(name string, t time.Time, r *intRange) {
	e.instant(name, t, time.Microsecond, "microseconds", r)
}

func (e encoder) unixS(name string, t time.Time, r *intRange) {
	e.instant(name, t, time.Second, "seconds", r)
}

// instant reads whole units since the Unix epoch, in UTC; 0 is the zero
// time.Time, as the encoder sends it.
func (d *decoder) instant(i int, name string, unit time.Duration, r *intRange) time.Time {
	n := d.int(i, name, r)
	if n == 0 {
		return time.Time{}
	}
	per := int64(time.Second / unit)
	return time.Unix(n/per, n%per*int64(unit)).UTC()
}

func (d *decoder) unixMs(i int, name string, r *intRange) time.Time {
	return d.instant(i, name, time.Millisecond, r)
}

func (d *decoder) unixUs(i int, name string, r *intRange) time.Time {
	return d.instant(i, name, time.Microsecond, r)
}

func (d *decoder) unixS(i int, name string, r *intRange) time.Time {
	return d.instant(i, name, time.Second, r)
}
