package scenario

import "time"

// concurrency's steps: Args are op, lease, limit and ttl (the clock last);
// a reply is ok, remaining, retry after and reset after (R).
func init() {
	sec, ms := time.Second, time.Millisecond
	c := func(op, lease string, limit int, ttl time.Duration) []string {
		return Args(op, lease, limit, ttl)
	}
	register(Spec{Script: "concurrency", CostArg: -1},
		Scenario{
			Name: "at most limit leases; acquire and release are safe to repeat",
			Keys: []string{"cc:{a}"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 2, 10*sec), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				{At: 0, Args: c("acquire", "b", 2, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				// Full: a slot frees when a's lease expires (10 s), unless
				// someone releases first.
				{At: 0, Args: c("acquire", "c", 2, 10*sec), Want: R(false, 0, 10000, 10000), TTL: []int64{10000}},
				// a again (a retried acquire): the same lease, extended.
				{At: sec, Args: c("acquire", "a", 2, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				{At: 2 * sec, Args: c("release", "b", 2, 10*sec), Want: R(true, 1, 0, 9000), TTL: []int64{9000}},
				{At: 2 * sec, Args: c("release", "b", 2, 10*sec), Want: R(false, 1, 0, 9000), TTL: []int64{9000}},
				{At: 2 * sec, Args: c("acquire", "c", 2, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				{At: 3 * sec, Args: c("renew", "c", 2, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				// A released lease cannot be renewed: its holder must acquire.
				{At: 3 * sec, Args: c("renew", "b", 2, 10*sec), Want: R(false, 0, 0, 10000), TTL: []int64{10000}},
				// a (11 s) expires first.
				{At: 3 * sec, Args: c("acquire", "d", 2, 10*sec), Want: R(false, 0, 8000, 10000), TTL: []int64{10000}},
				{At: 3 * sec, Args: c("release", "a", 2, 10*sec), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				{At: 3 * sec, Args: c("release", "c", 2, 10*sec), Want: R(true, 2, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "a crashed holder's lease expires and is removed",
			Keys: []string{"cc:{b}"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "x", 2, sec), Want: R(true, 1, 0, 1000), TTL: []int64{1000}},
				{At: 500 * ms, Args: c("acquire", "y", 2, sec), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 700 * ms, Args: c("acquire", "z", 2, sec), Want: R(false, 0, 300, 800), TTL: []int64{800}},
				// x's holder never came back: at 1 s its lease stopped counting.
				{At: 1200 * ms, Args: c("renew", "x", 2, sec), Want: R(false, 1, 0, 300), TTL: []int64{300}},
				{At: 1200 * ms, Args: c("release", "x", 2, sec), Want: R(false, 1, 0, 300), TTL: []int64{300}},
				{At: 1200 * ms, Args: c("acquire", "z", 2, sec), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 1200 * ms, Args: c("acquire", "x", 2, sec), Want: R(false, 0, 300, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name: "leases another process took count the same",
			Keys: []string{"cc:{p}"},
			// p expires at 5 s, q at 1 s: at 2 s only p counts.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "cc:{p}", Type: "zset", Vals: []string{Args(t0 + 5e6)[0], "p", Args(t0 + 1e6)[0], "q"}, TTL: 60000}}
			},
			Steps: []Step{
				{At: 2 * sec, Args: c("acquire", "r", 2, sec), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 2 * sec, Args: c("acquire", "q", 2, sec), Want: R(false, 0, 1000, 3000), TTL: []int64{3000}},
				{At: 2 * sec, Args: c("release", "p", 2, sec), Want: R(true, 1, 0, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name: "limits change while the key lives",
			Keys: []string{"cc:{limits}"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 3, 10*sec), Want: R(true, 2, 0, 10000), TTL: []int64{10000}},
				{At: sec, Args: c("acquire", "b", 3, 10*sec), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				{At: 2 * sec, Args: c("acquire", "c", 3, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				// Lowered to 1: no lease is revoked; one more fits once all
				// three have expired (c, at 12 s).
				{At: 2 * sec, Args: c("acquire", "d", 1, 10*sec), Want: R(false, 0, 10000, 10000), TTL: []int64{10000}},
				// Holders keep renewing what they hold.
				{At: 2 * sec, Args: c("renew", "a", 1, 10*sec), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
				// Raised to 5: the difference fits at once.
				{At: 2 * sec, Args: c("acquire", "d", 5, 10*sec), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				// A shorter ttl applies to leases taken from now on.
				{At: 3 * sec, Args: c("acquire", "e", 5, sec), Want: R(true, 0, 0, 9000), TTL: []int64{9000}},
				{At: 3 * sec, Args: c("release", "a", 5, sec), Want: R(true, 1, 0, 9000), TTL: []int64{9000}},
			},
		},
		Scenario{
			Name:        "caller clocks, late and early",
			Keys:        []string{"cc:{d}"},
			CallerClock: true,
			// With a caller clock a write keeps its key Grace past its last
			// lease's expiry by the server's clock.
			Steps: []Step{
				{At: 10 * sec, Args: c("acquire", "a", 1, 5*sec), Want: R(true, 0, 0, 5000), TTL: []int64{Grace + 5000}},
				// Stamped 9 s: a (15 s) is live for 6 s of its clock.
				{At: 9 * sec, Args: c("acquire", "b", 1, 5*sec), Want: R(false, 0, 6000, 6000), TTL: []int64{Grace + 5000}},
				// A late renew never moves an expiry back.
				{At: 9 * sec, Args: c("renew", "a", 1, 5*sec), Want: R(true, 0, 0, 6000), TTL: []int64{Grace + 5000}},
				{At: 12 * sec, Args: c("renew", "a", 1, 5*sec), Want: R(true, 0, 0, 5000), TTL: []int64{Grace + 5000}},
				// A clock 2 s ahead of the server's counts a (17 s) as expired
				// at 18 s, while the server reads 16 s: the caveat of callers'
				// clocks.
				{At: 18 * sec, Skew: 2 * sec, Args: c("acquire", "b", 1, 5*sec), Want: R(true, 0, 0, 5000), TTL: []int64{Grace + 7000}},
			},
		},
		Scenario{
			Name: "bad input is an error and leaves the key alone",
			Keys: []string{"cc:{e}"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 2, sec), Want: R(true, 1, 0, 1000), TTL: []int64{1000}},
				{Args: c("take", "a", 2, sec), Err: "BADARG op must be 'acquire', 'renew' or 'release'", TTL: []int64{1000}},
				{Args: c("ACQUIRE", "a", 2, sec), Err: "BADARG op"},
				{Args: c("", "a", 2, sec), Err: "BADARG op"},
				{Args: c("acquire", "", 2, sec), Err: "BADARG lease must be 1 to 64 of A-Z, a-z, 0-9, '_' and '-', and not <digits>-<digits>"},
				{Args: c("acquire", "a b", 2, sec), Err: "BADARG lease"},
				{Args: c("acquire", "a\x00", 2, sec), Err: "BADARG lease"},
				{Args: c("release", "é", 2, sec), Err: "BADARG lease"},
				// An earlier sliding_window_log.lua's member, never a lease.
				{Args: c("acquire", "1767225600000000-1", 2, sec), Err: "BADARG lease"},
				{Args: c("acquire", "0123456789012345678901234567890123456789012345678901234567890123x", 2, sec), Err: "BADARG lease"},
				{Args: c("acquire", "b", 0, sec), Err: "BADARG limit must be an integer from 1 to 10000, got '0'"},
				{Args: c("acquire", "b", 10001, sec), Err: "BADARG limit"},
				{Args: Args("acquire", "b", "2.0", 1000), Err: "BADARG limit"},
				{Args: c("acquire", "b", 2, 0), Err: "BADARG ttl must be an integer from 1 to 86400000, got '0'"},
				{Args: Args("acquire", "b", 2, 86400001), Err: "BADARG ttl"},
				{Args: Args("renew", "a", 2, "1e3"), Err: "BADARG ttl"},
				{Args: c("acquire", "b", 2, sec), Now: "x", Err: "BADARG now"},
				{Args: Args("acquire", "b", 2, 1000, 0), Err: "BADARG takes 1 key(s) and 6 arguments, got 1 and 7"},
				{At: 0, Args: c("release", "a", 2, sec), Want: R(true, 2, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name:    "a key of another type is an error, never overwritten",
			Keys:    []string{"cc:{wrong}"},
			Strings: map[string]string{"cc:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 2, sec), Err: "WRONGTYPE", TTL: []int64{-1}},
				{At: 0, Args: c("release", "a", 2, sec), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "a set of other members is an error, never overwritten",
			Keys: []string{"cc:{foreign}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "cc:{foreign}", Type: "zset", Vals: []string{Args(t0 + 5e6)[0], "not a lease"}}}
			},
			Steps: []Step{
				{At: 0, Args: c("acquire", "a", 2, sec), Err: "BADSTATE", TTL: []int64{-1}},
				{At: 0, Args: c("renew", "a", 2, sec), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "an expiry past what a lease can have is an error too",
			Keys: []string{"cc:{far}"},
			// A day and 60 s is the latest a lease taken now can expire.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "cc:{far}", Type: "zset", Vals: []string{Args(t0 + 86460e6 + 1e6)[0], "a"}}}
			},
			Steps: []Step{
				{At: 0, Args: c("release", "a", 2, sec), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
