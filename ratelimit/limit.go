package ratelimit

import (
	"fmt"
	"time"
)

// A Limit says how much a limiter admits: Rate requests per Period at the
// steady pace, and Burst at once. Build one with Per, PerSecond or
// PerMinute, which set Burst to Rate, and WithBurst; a zero field is
// refused, never read as "no limit". Algorithm says how each reads it.
type Limit struct {
	Rate   int64         // requests per Period (1 to 1e9)
	Period time.Duration // a whole number of milliseconds, 1 ms to 1e11 ms
	Burst  int64         // requests that may pass at once (1 to 1e9)

	// A quota by the calendar (Daily and the like): the period and the
	// time zone its boundaries fall in. Unexported, so that only the
	// constructors make one, and comparable, so that Limit stays usable
	// as a map key and with ==.
	cal calendar
	loc *time.Location
}

// Per is n requests per period, n at once: Per(5, 15*time.Minute).
func Per(n int64, period time.Duration) Limit { return Limit{Rate: n, Period: period, Burst: n} }

// PerSecond is n requests per second, n at once.
func PerSecond(n int64) Limit { return Per(n, time.Second) }

// PerMinute is n requests per minute, n at once.
func PerMinute(n int64) Limit { return Per(n, time.Minute) }

// WithBurst returns l with Burst set to n. Window algorithms admit Rate per
// window, so for them n must equal Rate.
func (l Limit) WithBurst(n int64) Limit {
	l.Burst = n
	return l
}

// Daily is a quota of n requests a calendar day in loc, counted from 0 at
// every midnight there, so a day of a DST change lasts 23 or 25 hours. It
// counts in a FixedWindow (New picks it). Period is 24h, for headers; loc
// must not be nil (time.UTC for UTC).
func Daily(n int64, loc *time.Location) Limit { return quota(n, day, loc) }

// Weekly is Daily for a week that starts on Monday at 00:00 (ISO 8601);
// Period is 7 days.
func Weekly(n int64, loc *time.Location) Limit { return quota(n, week, loc) }

// Monthly is Daily for a month that starts on the 1st at 00:00; Period is
// 31 days, the longest month.
func Monthly(n int64, loc *time.Location) Limit { return quota(n, month, loc) }

// Yearly is Daily for a year that starts on January 1st at 00:00; Period
// is 366 days.
func Yearly(n int64, loc *time.Location) Limit { return quota(n, year, loc) }

func quota(n int64, c calendar, loc *time.Location) Limit {
	return Limit{Rate: n, Period: c.nominal(), Burst: n, cal: c, loc: loc}
}

// format reads like "10 per 1s, burst 20", or "10000 a month in
// Europe/Berlin" for a quota, for messages.
func (l Limit) format() string {
	if l.cal != 0 {
		zone := "a nil Location"
		if l.loc != nil {
			zone = l.loc.String()
		}
		return fmt.Sprintf("%d a %s in %s", l.Rate, l.cal, zone)
	}
	return fmt.Sprintf("%d per %v, burst %d", l.Rate, l.Period, l.Burst)
}

// A calendar is the period of a quota: a day, an ISO week, a month or a
// year of the calendar in a time zone; 0 is none (a rate).
type calendar uint8

const (
	day calendar = 1 + iota
	week
	month
	year
)

func (c calendar) String() string {
	return [...]string{"", "day", "week", "month", "year"}[c]
}

// nominal is the Limit.Period of a quota: the period's longest length,
// DST aside.
func (c calendar) nominal() time.Duration {
	return [...]time.Duration{0, 24 * time.Hour, 7 * 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour}[c]
}

// start is the first instant of the period that holds the date y-m-d in
// loc. time.Date places every boundary, so a DST change moves it as the
// calendar does: the day it happens lasts 23 or 25 hours.
func (c calendar) start(y int, m time.Month, d int, wd time.Weekday, loc *time.Location) time.Time {
	switch c {
	case week:
		return time.Date(y, m, d-(int(wd)+6)%7, 0, 0, 0, 0, loc)
	case month:
		return time.Date(y, m, 1, 0, 0, 0, 0, loc)
	case year:
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	}
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// next is the start of the period after the one that starts at s.
func (c calendar) next(s time.Time, loc *time.Location) time.Time {
	y, m, d := s.In(loc).Date()
	switch c {
	case week:
		d += 7
	case month:
		m++
	case year:
		y++
	default:
		d++
	}
	// The date, not s plus a length: a period after a DST change starts
	// at the same wall-clock time as the one before it.
	return c.start(y, m, d, time.Monday, loc)
}

// period returns the start and the end of the quota's period that holds t.
func (l Limit) period(t time.Time) (start, end time.Time) {
	lt := t.In(l.loc)
	y, m, d := lt.Date()
	start = l.cal.start(y, m, d, lt.Weekday(), l.loc)
	end = l.cal.next(start, l.loc)
	// A midnight that a DST change skips (in zones that change at 00:00)
	// is placed by time.Date on one side of the gap, the same side for
	// the period that ends and the one that starts there.
	for !end.After(t) {
		start, end = end, l.cal.next(end, l.loc)
	}
	return start, end
}

// maxSkew is the most the scripts let a caller's clock differ from the
// server's TIME.
const maxSkew = 60 * time.Second

// periods are the boundaries fixed_window.lua's calendar form takes for a
// call at now (zero: this process's clock): the period that holds now
// less the 60 s a clock may differ from the server's, its end, and the
// end of the next one. Whichever clock the script judges at (within 60 s
// of now) lies in them.
func (l Limit) periods(now time.Time) (b0, b1, b2 time.Time) {
	if now.IsZero() {
		now = time.Now()
	}
	b0, b1 = l.period(now.Add(-maxSkew))
	return b0, b1, l.cal.next(b1, l.loc)
}
