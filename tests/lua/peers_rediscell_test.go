package luatest

// A reference model of brandur/redis-cell's CL.THROTTLE (MIT License), ported
// by hand to Go (no code copied) from the repository's Rust sources:
//
//   - redis-cell-impl/src/lib.rs: Rate::per_period (the emission interval,
//     truncated to whole ns through f64), RateLimiter::new (limit and
//     delay_variation_tolerance from max_burst + 1) and
//     RateLimiter::rate_limit (the GCRA decision, remaining, ttl).
//   - redis-cell/src/lib.rs: ThrottleCommand::run (period in whole seconds,
//     the reply array and its rounding of durations to whole seconds).
//   - redis-cell/src/store.rs and src/redis/mod.rs: InternalRedisStore writes
//     the new TAT (ns since the epoch) and set_expire(ttl.whole_milliseconds()).
//
// Only what changes a reply is kept: the compare-and-swap loop never retries
// inside Redis (the command runs atomically), and logging is left out.

// cellModel is one redis-cell key and the limiter that guards it.
type cellModel struct {
	interval int64 // emission_interval, ns
	dvt      int64 // delay_variation_tolerance = interval * (max_burst + 1), ns
	limit    int64 // max_burst + 1

	// The key: a TAT in ns since the epoch, alive while the Redis clock in
	// ms has not passed expireMs (Redis deletes a key once now > when).
	has      bool
	tat      int64
	expireMs int64
}

// newCellThrottle is the limiter CL.THROTTLE key max_burst count period
// builds: period is in whole seconds there.
func newCellThrottle(maxBurst, count, periodS int64) *cellModel {
	ns := periodS * 1_000_000_000
	// Rate::per_period: ((ns as f64) / (n as f64)) as i64, a truncation.
	return newCellLimiter(maxBurst, int64(float64(ns)/float64(count)))
}

// newCellLimiter is RateLimiter::new with a Rate{period: interval}, which the
// library accepts for any interval; CL.THROTTLE itself can only say periods
// of whole seconds.
func newCellLimiter(maxBurst, intervalNs int64) *cellModel {
	return &cellModel{interval: intervalNs, dvt: intervalNs * (maxBurst + 1), limit: maxBurst + 1}
}

func (m *cellModel) clone() *cellModel { c := *m; return &c }

// cellResult is RateLimitResult plus the limited flag; durations in ns.
type cellResult struct {
	limited                bool
	limit, remaining       int64
	retryAfter, resetAfter int64
}

// rateLimit is RateLimiter::rate_limit(key, quantity) at nowNs.
func (m *cellModel) rateLimit(nowNs, quantity int64) cellResult {
	rlc := cellResult{limit: m.limit, retryAfter: -1_000_000_000, resetAfter: -1_000_000_000}
	increment := m.interval * quantity

	// store.get_with_time: -1 for a missing key, and then tat = now.
	tatVal, ok := m.get(nowNs)
	tat := tatVal
	if !ok {
		tat = nowNs
	}
	newTat := tat + increment
	if nowNs > tat {
		newTat = nowNs + increment
	}
	allowAt := newTat - m.dvt
	diff := nowNs - allowAt

	var ttl int64
	if diff < 0 {
		if increment <= m.dvt {
			rlc.retryAfter = -diff
		}
		rlc.limited = true
		ttl = tat - nowNs
	} else {
		ttl = newTat - nowNs
		// set_if_not_exists_with_ttl or compare_and_swap_with_ttl: both write
		// the new TAT and set_expire(ttl), in whole ms (truncated).
		m.has, m.tat = true, newTat
		m.expireMs = nowNs/1_000_000 + ttl/1_000_000
	}

	next := m.dvt - ttl
	if next > -m.interval {
		// whole_microseconds() truncates toward zero; the f64 quotient is
		// truncated by `as i64`.
		rlc.remaining = int64(float64(next/1000) / float64(m.interval/1000))
	}
	rlc.resetAfter = ttl
	return rlc
}

func (m *cellModel) get(nowNs int64) (int64, bool) {
	if m.has && nowNs/1_000_000 > m.expireMs {
		m.has = false
	}
	return m.tat, m.has
}

// cellSeconds is how ThrottleCommand::run turns a duration into the whole
// seconds it replies: whole_seconds(), plus one when subsec_milliseconds()
// is above 0. So a wait of 2 s and 0.5 ms reads as 2, not 3.
func cellSeconds(ns int64) int64 {
	s := ns / 1_000_000_000
	if (ns%1_000_000_000)/1_000_000 > 0 {
		s++
	}
	return s
}

// throttleReply is CL.THROTTLE's reply: limited (1 = denied), limit,
// remaining, retry_after s (-1 unless denied with a quantity that could ever
// pass), reset_after s.
func (r cellResult) throttleReply() [5]int64 {
	limited := int64(0)
	if r.limited {
		limited = 1
	}
	return [5]int64{limited, r.limit, r.remaining, cellSeconds(r.retryAfter), cellSeconds(r.resetAfter)}
}
