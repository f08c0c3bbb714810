package ratelimit

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A quota's periods fall where its calendar says, DST included: a day of
// a change lasts 23 or 25 hours, in Europe and in America, spring and
// autumn; weeks start on Monday; months and years at 00:00 of the 1st.
func TestQuotaPeriods(t *testing.T) {
	berlin, ny := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	at := func(loc *time.Location, y int, m time.Month, d, h, min int) time.Time {
		return time.Date(y, m, d, h, min, 0, 0, loc)
	}
	for _, c := range []struct {
		name       string
		l          Limit
		t          time.Time
		start, end time.Time
		length     time.Duration
	}{
		{"Berlin spring day", Daily(1, berlin), at(berlin, 2026, 3, 29, 12, 0), at(berlin, 2026, 3, 29, 0, 0), at(berlin, 2026, 3, 30, 0, 0), 23 * time.Hour},
		{"Berlin autumn day", Daily(1, berlin), at(berlin, 2026, 10, 25, 23, 59), at(berlin, 2026, 10, 25, 0, 0), at(berlin, 2026, 10, 26, 0, 0), 25 * time.Hour},
		{"Berlin ordinary day", Daily(1, berlin), at(berlin, 2026, 3, 28, 0, 0), at(berlin, 2026, 3, 28, 0, 0), at(berlin, 2026, 3, 29, 0, 0), 24 * time.Hour},
		{"New York spring day", Daily(1, ny), at(ny, 2026, 3, 8, 1, 0), at(ny, 2026, 3, 8, 0, 0), at(ny, 2026, 3, 9, 0, 0), 23 * time.Hour},
		{"New York autumn day", Daily(1, ny), at(ny, 2026, 11, 1, 1, 30), at(ny, 2026, 11, 1, 0, 0), at(ny, 2026, 11, 2, 0, 0), 25 * time.Hour},
		// 2026-03-02 is a Monday; the week of the spring change in New York.
		{"New York week", Weekly(1, ny), at(ny, 2026, 3, 8, 23, 0), at(ny, 2026, 3, 2, 0, 0), at(ny, 2026, 3, 9, 0, 0), 7*24*time.Hour - time.Hour},
		{"Berlin week on a Sunday", Weekly(1, berlin), at(berlin, 2026, 1, 4, 12, 0), at(berlin, 2025, 12, 29, 0, 0), at(berlin, 2026, 1, 5, 0, 0), 7 * 24 * time.Hour},
		{"Berlin week on its Monday", Weekly(1, berlin), at(berlin, 2026, 1, 5, 0, 0), at(berlin, 2026, 1, 5, 0, 0), at(berlin, 2026, 1, 12, 0, 0), 7 * 24 * time.Hour},
		{"Berlin month", Monthly(1, berlin), at(berlin, 2026, 1, 31, 23, 59), at(berlin, 2026, 1, 1, 0, 0), at(berlin, 2026, 2, 1, 0, 0), 31 * 24 * time.Hour},
		{"Berlin March, 1 hour short", Monthly(1, berlin), at(berlin, 2026, 3, 1, 0, 0), at(berlin, 2026, 3, 1, 0, 0), at(berlin, 2026, 4, 1, 0, 0), 31*24*time.Hour - time.Hour},
		{"New York February", Monthly(1, ny), at(ny, 2028, 2, 29, 12, 0), at(ny, 2028, 2, 1, 0, 0), at(ny, 2028, 3, 1, 0, 0), 29 * 24 * time.Hour},
		{"UTC year", Yearly(1, time.UTC), at(time.UTC, 2026, 12, 31, 23, 59), at(time.UTC, 2026, 1, 1, 0, 0), at(time.UTC, 2027, 1, 1, 0, 0), 365 * 24 * time.Hour},
		{"Berlin year starts at its midnight", Yearly(1, berlin), at(time.UTC, 2026, 12, 31, 23, 30), at(berlin, 2027, 1, 1, 0, 0), at(berlin, 2028, 1, 1, 0, 0), 365 * 24 * time.Hour},
	} {
		start, end := c.l.period(c.t)
		if !start.Equal(c.start) || !end.Equal(c.end) || end.Sub(start) != c.length {
			t.Errorf("%s: period of %v = [%v, %v) (%v), want [%v, %v) (%v)", c.name, c.t, start, end, end.Sub(start), c.start, c.end, c.length)
		}
	}
}

// The boundaries the script is given hold the instant, whichever clock it
// is judged at within 60 s of the caller's, near a boundary too.
func TestQuotaPeriodsNearABoundary(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	l := Daily(1, berlin)
	mid := time.Date(2026, 3, 30, 0, 0, 0, 0, berlin) // after the 23-hour day
	for _, d := range []time.Duration{-61 * time.Second, -60 * time.Second, -time.Second, 0, time.Second, 59 * time.Second, 60 * time.Second, 61 * time.Second} {
		now := mid.Add(d)
		b0, b1, b2 := l.periods(now)
		for _, judged := range []time.Time{now.Add(-maxSkew), now, now.Add(maxSkew)} {
			if judged.Before(b0) || !judged.Before(b2) {
				t.Errorf("now %v: [%v, %v) does not hold %v", d, b0, b2, judged)
			}
		}
		wantB1 := mid
		if d >= 60*time.Second {
			wantB1 = mid.AddDate(0, 0, 1)
		}
		if !b1.Equal(wantB1) || b2.Sub(b1) < 23*time.Hour {
			t.Errorf("now %v: periods %v, %v, %v; want the boundary %v", d, b0, b1, b2, wantB1)
		}
	}
	if b0, b1, _ := l.periods(mid.Add(30 * time.Second)); b1.Sub(b0) != 23*time.Hour {
		t.Errorf("30 s after the short day: the period before is %v long, want 23h", b1.Sub(b0))
	}
}

// A quota stays comparable and prints its calendar; checkLimit refuses
// a nil Location and any algorithm but FixedWindow.
func TestQuotaLimit(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	if Monthly(10, berlin) != Monthly(10, berlin) || Monthly(10, berlin) == Daily(10, berlin) || Monthly(10, berlin) == Per(10, 31*24*time.Hour) {
		t.Error("quotas compare by their calendar and zone")
	}
	if got := Monthly(10000, berlin).format(); got != "10000 a month in Europe/Berlin" {
		t.Errorf("format = %q", got)
	}
	if err := checkLimit(FixedWindow, Daily(5, nil)); err == nil || err.Error() != "ratelimit: invalid: fixed_window limit {5 a day in a nil Location}: Location is nil: a quota by the calendar needs a time zone (time.UTC for UTC)" {
		t.Errorf("nil Location: %v", err)
	}
	for _, a := range []Algorithm{GCRA, TokenBucket, LeakyBucket, SlidingWindowLog, SlidingWindowCounter} {
		if err := checkLimit(a, Weekly(5, berlin)); err == nil {
			t.Errorf("%v takes a quota", a)
		}
	}
	if err := checkLimit(FixedWindow, Yearly(1e9, berlin)); err != nil {
		t.Errorf("a yearly quota of 1e9: %v", err)
	}
}

// FailLocal's in-memory limiter counts a quota by its period too: the
// count ends at the boundary, not at a steady pace.
func TestLocalQuota(t *testing.T) {
	lc := newLocal()
	l := Daily(2, time.UTC)
	now := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	for i, want := range []bool{true, true, false} {
		d := lc.decideAt("k", l, 1, 1, now)
		if d.Allowed != want {
			t.Fatalf("request %d: %+v, want allowed %v", i, d, want)
		}
		if !want && (d.RetryAfter != time.Hour || d.ResetAfter != time.Hour || d.Remaining != 0) {
			t.Errorf("denied: %+v, want a wait of 1h to midnight", d)
		}
	}
	if d := lc.decideAt("k", l, 1, 0, now.Add(time.Hour)); !d.Allowed || d.Remaining != 2 || d.ResetAfter != 0 {
		t.Errorf("at midnight: %+v, want a fresh day", d)
	}
	// Half of the quota in memory.
	if d := lc.decideAt("j", Daily(10, time.UTC), 0.5, 5, now); !d.Allowed || d.Remaining != 0 {
		t.Errorf("a share of 0.5: %+v, want 5 of 5", d)
	}
	// The monotonic clock reads as this process's wall clock.
	if w := localWall(localNowNs(time.Time{})); time.Since(w).Abs() > time.Minute {
		t.Errorf("localWall of the monotonic clock = %v, want about now", w)
	}
}
