package luatest

import (
	"math"
	"strconv"
	"time"
)

// A reference model of go-redis/redis_rate v10's AllowN (BSD-2-Clause),
// ported by hand to Go (no code copied) from the repository:
//
//   - script_allow_n.lua (the same text as the allowN script in lua.go, whose
//     header credits rwz/redis-gcra): GCRA in float seconds since
//     2017-01-01, the TAT stored as a float string.
//   - rate.go: AllowN sends burst, rate, Period.Seconds() and n, and turns
//     the reply's float-second strings into Durations with dur().
//
// Every float operation is done in float64 in the script's order; explicit
// float64() conversions keep Go from fusing a multiply and an add, which
// Lua 5.1 never does. The key's EX of ceil(reset_after) seconds outlives the
// TAT, and a TAT behind now counts as now (math.max), so expiry changes no
// reply and is not modelled.

// rateModel is one redis_rate key and the Limit it is called with.
type rateModel struct {
	burst, rate, period float64 // ARGV[1..3] as the script coerces them

	has bool
	tat float64 // the stored TAT, s since 2017-01-01
}

const jan1st2017 = 1483228800

func newRateModel(burst, rate int, period time.Duration) *rateModel {
	// go-redis writes an int with strconv.AppendInt and a float64 with
	// strconv.AppendFloat(f, 'f', -1, 64); Lua reads them back with strtod.
	p, err := strconv.ParseFloat(strconv.FormatFloat(period.Seconds(), 'f', -1, 64), 64)
	if err != nil {
		panic(err)
	}
	return &rateModel{burst: float64(burst), rate: float64(rate), period: p}
}

func (m *rateModel) clone() *rateModel { c := *m; return &c }

// rateResult is redis_rate's Result, plus the script's unrounded numbers.
type rateResult struct {
	Allowed, Remaining     int
	RetryAfter, ResetAfter time.Duration // -1 is redis_rate's "no wait" sentinel

	diff      float64 // now - allow_at, s
	remaining float64 // diff / emission_interval, before Redis truncates it
}

// luaSeconds is now as the script computes it from TIME:
// (now[1] - jan_1_2017) + (now[2] / 1000000).
func luaSeconds(us int64) float64 {
	return float64(float64(us/1e6-jan1st2017) + float64(float64(us%1e6)/1e6))
}

// allowN runs the script at nowUs (TIME) with cost n.
func (m *rateModel) allowN(nowUs int64, n int) rateResult {
	cost := float64(n)
	emission := float64(m.period / m.rate)
	increment := float64(emission * cost)
	burstOffset := float64(emission * m.burst)
	now := luaSeconds(nowUs)

	tat := now
	if m.has {
		tat = m.tat
	}
	tat = math.Max(tat, now)
	newTat := float64(tat + increment)
	allowAt := float64(newTat - burstOffset)
	diff := float64(now - allowAt)
	remaining := float64(diff / emission)

	if remaining < 0 {
		return rateResult{
			Allowed: 0, Remaining: 0,
			RetryAfter: dur(luaToString(float64(diff * -1))),
			ResetAfter: dur(luaToString(float64(tat - now))),
			diff:       diff, remaining: remaining,
		}
	}
	resetAfter := float64(newTat - now)
	if resetAfter > 0 {
		// SET key new_tat EX ceil(reset_after): Redis prints the double so
		// that it reads back exactly.
		m.has, m.tat = true, newTat
	}
	return rateResult{
		// Redis turns a Lua number into an integer reply by truncation.
		Allowed: n, Remaining: int(remaining),
		RetryAfter: dur("-1"),
		ResetAfter: dur(luaToString(resetAfter)),
		diff:       diff, remaining: remaining,
	}
}

// luaToString is Redis's Lua 5.1 tostring of a number: "%.14g".
func luaToString(f float64) string { return strconv.FormatFloat(f, 'g', 14, 64) }

// dur is rate.go's: ParseFloat, then -1 stays -1 and anything else is
// seconds, truncated to ns.
func dur(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	if f == -1 {
		return -1
	}
	return time.Duration(f * float64(time.Second))
}

// setTAT puts a TAT in whole µs since the epoch into the key, as the float
// the script would hold for it.
func (m *rateModel) setTAT(us int64) { m.has, m.tat = true, luaSeconds(us) }

// tatUs reads the key's TAT back in µs since the epoch, rounded to the
// nearest µs: the doubles are within a fraction of a µs of whole µs.
func (m *rateModel) tatUs() (int64, bool) {
	return int64(math.Round(m.tat*1e6)) + jan1st2017*1e6, m.has
}
