// Package redis_rate is a drop-in replacement for
// github.com/go-redis/redis_rate/v10 (v10.0.1) that decides with
// redlimit's GCRA script (lua/gcra.lua). It has the same exported API
// (Limit, PerSecond, PerMinute, PerHour, NewLimiter, Limiter.Allow, AllowN,
// AllowAtMost, Reset and Result, with the same field types), so a service
// switches by changing one import path:
//
//	import "github.com/go-redis/redis_rate/v10"             // before
//	import "github.com/redlimit/redlimit/compat/redis_rate" // after
//
// What changes is the arithmetic: redlimit's scripts count time in
// integer microseconds, where redis_rate counts float seconds since 2017.
// Past 2^28 of them (2025-07-04) 0.1 s no longer adds exactly, and a first
// Allow at PerSecond(10) leaves redis_rate's Remaining at 8, not 9 (200
// fresh keys of 200 here); 4 of redis_rate's own 5 tests fail on it for
// that reason. Input is strict, and AllowAtMost counts whole events in one
// call of lua/gcra.lua (its take at_most): nothing comes between the look
// and the take.
//
// # Keys, and migrating
//
// The state of key k is one string at rate:<k> with a TTL, as in
// redis_rate, but its value is redlimit's. A key that holds redis_rate's
// state is refused with ErrBadState and left untouched (never read as
// something it is not), and redis_rate never takes a request on
// redlimit's state: it answers it with a Lua error, or, for the short
// state GCRA keeps after one request (a number), with a denial and a wait
// of decades. So a migration starts every key fresh: stop redis_rate's writers,
// then delete their keys (SCAN MATCH rate:* with UNLINK, or Limiter.Reset
// per key) or let them expire, which takes at most a full burst's time
// rounded up to a second. Do not run both on the same keys at once.
//
// # Differences
//
// redis_rate's own rate_test.go runs against this package on a real Redis,
// with every changed line marked "redlimit:". It meets one deliberate
// difference, in the two assertions it changes (TestAllow and
// TestAllowAtMost):
//
//   - D1: AllowN with n above the burst can never pass. It is denied with
//     RetryAfter Never (the longest time.Duration, as x/time/rate's
//     InfDuration), never -1, which means "not limited" in redis_rate: a
//     caller that waits RetryAfter would spin at -1. redis_rate answers the
//     time the excess would take at the steady rate (99 s for 1000 at
//     PerSecond(10)), after which the call is denied again, forever.
//
// Differences its suite does not meet:
//
//   - Durations are whole milliseconds, rounded up, so a wait is never
//     shorter than the real one; redis_rate's are float seconds.
//   - Bad input is refused before anything is sent, with a
//     *bindings.ArgError: a negative n (redis_rate hands the quota back:
//     AllowN(-5) on an empty bucket of 10 leaves 5), a Rate or Burst below
//     1 or above 1e9 (a zero Limit included; redis_rate fails with a parse
//     error on "-nan"), a Period that is not a whole number of
//     milliseconds from 1 ms to 1e11 ms, more than one event per µs, or a
//     burst that takes more than 31 years.
//   - A denied call reports in Remaining what is left (redis_rate: 0).
//   - AllowAtMost takes whole events. redis_rate takes what is left even
//     when it is a fraction: 2.5 events left, it counts 2.5 and reports 2.
//   - AllowN(ctx, key, limit, 0) counts nothing and is never limited
//     (RetryAfter -1), whatever is left. AllowAtMost with n = 0 answers as
//     redis_rate does: RetryAfter -1 while one event would pass, the wait
//     for one otherwise.
//   - A Limit that changes while a key lives applies from the key's last
//     write: a lowered burst is full, never locked out, and a raised rate
//     frees what it drains.
//   - A call carries its context's deadline: one that Redis runs at or
//     after it (go-redis sending it again after a read timeout, a server
//     that stalled with it queued) counts nothing and fails with an error
//     matching bindings.ErrExpired, where redis_rate counts it. The deadline is an
//     instant on this process's clock judged by Redis's TIME: keep the two
//     clocks in step (NTP holds them within milliseconds).
//   - On a redis.Pipeliner a call returns bindings.ErrPipeline (redis_rate
//     panics on the empty reply). Error replies are *bindings.ScriptError
//     and match ErrBadState and the other bindings sentinels with
//     errors.Is.
package redis_rate
