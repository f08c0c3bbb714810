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

// format reads like "10 per 1s, burst 20", for messages.
func (l Limit) format() string {
	return fmt.Sprintf("%d per %v, burst %d", l.Rate, l.Period, l.Burst)
}
