// Package ratelimit limits requests with state in Redis: one Limiter per
// limit, shared by every process that names it alike, deciding each
// request with one call of a vetted Lua script (no Redis module).
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err) // a limit that means nothing is refused here
//	}
//	d, err := limiter.Allow(ctx, "user:42")
//	if err == nil && !d.Allowed {
//		// over the limit: retry after d.RetryAfter
//	}
//
// The model: a Limit (PerSecond(10), PerMinute(100).WithBurst(20)) read by
// an Algorithm (GCRA by default); a Limiter applies it to any number of
// keys. Allow and AllowN count a request if it passes, Peek looks without
// counting, Wait blocks until it passes. Every answer is a Decision, the
// same for every algorithm. A Rule is anything that decides a request: a
// Limiter, a Multi (several GCRA limits checked atomically, all or
// nothing), All (several rules, each on its own, not atomic), Select (a
// rule chosen per key, such as a customer's plan) and Unlimited.
//
// When Redis fails, a limiter returns ErrUnavailable, or decides by its
// failure policy (OnFailure): FailOpen, FailClosed, or FailLocal, which
// keeps limiting in memory at a share of the limit.
//
// Subpackages: httplimit (net/http middleware, key functions, the IETF
// RateLimit header fields), clientip (the client address behind trusted
// proxies) and inflight (a cap on requests in flight, with leases). The
// docs directory of the repository explains the algorithms, the keys, the
// failure policies and recipes for everyday tasks.
package ratelimit
