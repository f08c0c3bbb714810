package ratelimit

import (
	"fmt"
	"time"
)

// A Limit says how much a limiter admits: Rate requests per Period at the
// steady pace, and Burst requests at once. How each algorithm reads it is
// documented on Algorithm; New refuses a Limit that means nothing for its
// algorithm.
//
// Build one with PerSecond, PerMinute, PerHour, PerDay or Every, which set
// Burst to Rate, and WithBurst to change the burst. A Limit literal must set
// all three fields: a zero field is refused, never read as "no limit".
type Limit struct {
	Rate   int64         // requests per Period (1 to 1e9)
	Period time.Duration // a whole number of milliseconds, 1 ms to 1e11 ms
	Burst  int64         // requests that may pass at once (1 to 1e9)
}

// PerSecond is n requests per second, n at once.
func PerSecond(n int64) Limit { return Limit{Rate: n, Period: time.Second, Burst: n} }

// PerMinute is n requests per minute, n at once.
func PerMinute(n int64) Limit { return Limit{Rate: n, Period: time.Minute, Burst: n} }

// PerHour is n requests per hour, n at once.
func PerHour(n int64) Limit { return Limit{Rate: n, Period: time.Hour, Burst: n} }

// PerDay is n requests per 24 hours, n at once. Window algorithms align
// their windows to the Unix epoch, so a FixedWindow day starts at UTC
// midnight.
func PerDay(n int64) Limit { return Limit{Rate: n, Period: 24 * time.Hour, Burst: n} }

// Every is one request per d, one at once. The scripts count time in whole
// milliseconds, so d must be a whole number of milliseconds.
func Every(d time.Duration) Limit { return Limit{Rate: 1, Period: d, Burst: 1} }

// WithBurst returns l with Burst set to n. Window algorithms admit Rate per
// window, so for them n must equal Rate.
func (l Limit) WithBurst(n int64) Limit {
	l.Burst = n
	return l
}

// format reads like "10 per 1s, burst 20", for messages.
func (l Limit) format() string {
	return fmt.Sprintf("%d per %v, burst %d", l.Rate, l.Period, l.Burst)
}
