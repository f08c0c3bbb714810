// Package ratelimit limits requests with state in Redis: a Limiter applies
// a Limit to any number of keys, shared by every process that names it
// alike, and decides each request with one call of a vetted Lua script.
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
// Allow counts a request if it passes, Peek looks, Wait blocks until it
// passes; every answer is a Decision. A Rule decides requests: a Limiter,
// All or Atomic (several limits) or Select (a rule per key). A Fallback
// decides when Redis cannot. Subpackages: httplimit (net/http), inflight
// (requests in flight), clientip and preflight.
package ratelimit
