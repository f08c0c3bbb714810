// Package ratelimit limits requests with state in Redis: a Limiter applies
// a Limit to any number of keys, shared by every process that names it
// alike, deciding each request in one call of a vetted Lua script.
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err) // a limit that means nothing
//	}
//	d, err := limiter.Allow(ctx, "user:42")
//	if err == nil && !d.Allowed {
//		// denied: retry after d.RetryAfter
//	}
//
// Allow counts a request if it passes, Peek looks, Wait blocks until it
// passes; each answers a Decision. A Rule is a Limiter, All or Atomic
// (several limits) or Select (a rule per key). A Fallback decides when
// Redis cannot. Subpackages: httplimit, inflight, clientip, preflight.
package ratelimit
