// Package redis is a limiter.Store for github.com/ulule/limiter/v3 whose
// counting is done by redlimit's fixed window script (lua/fixed_window.lua):
// ulule's middleware (stdlib, gin, fasthttp), its limiter.Limiter and its
// limiter.Rate values ("1000-H") work unchanged over it. Its API is that of
// ulule's Redis store (NewStore, NewStoreWithOptions), so a service
// switches by changing the store's import path:
//
//	sredis "github.com/ulule/limiter/v3/drivers/store/redis" // before
//	sredis "github.com/redlimit/redlimit/compat/ulule/redis" // after
//
//	store, err := sredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: "limiter"})
//
// ulule's Redis store counts a key with INCRBY and gives it a TTL of one
// Period at its first hit: a fixed window per key. This store keeps that
// model (Limit requests per Period, all of them back when the window
// ends, X-RateLimit-Reset the window's end) in one atomic script call per
// decision, with strict input and bounded state.
//
// # Keys, and migrating
//
// The count of key k is one string at <Prefix>:<k> with a TTL, as in
// ulule, but its value is redlimit's. A key that holds ulule's counter is
// refused with bindings.ErrBadState and left untouched (never read as a
// count), so a migration starts every key fresh: stop ulule's writers,
// then delete their keys (SCAN MATCH <Prefix>:* with UNLINK) or let them
// expire, within one Period; or give this store a new Prefix. Do not run
// both on the same keys at once: ulule reads this store's state, a string
// of digits, as a count above any Limit and refuses every request.
//
// # Differences
//
// ulule's own store suite (drivers/store/tests) and its stdlib, gin and
// fasthttp middleware tests run against this store on a real Redis, with
// every changed line marked "redlimit:". They meet one deliberate
// difference, in one assertion of TestStoreSequentialAccess:
//
//   - D1: Peek's Reached says whether a Get would be refused now. With the
//     window's last request counted, ulule's Peek answers Reached false
//     (its count is not yet above Limit) and the next Get is refused; this
//     store answers true. A caller that peeks before acting (a login
//     throttle that peeks, then increments on a failure) gets Limit tries
//     here, Limit+1 with ulule.
//
// Differences its suites do not meet:
//
//   - Windows are aligned to the epoch (a minute window starts on the
//     minute, a day window at 00:00 UTC), the same for every key, not
//     started at each key's first hit. A window still admits at most Limit,
//     and Reset is still its end. ulule's suites assume that a window
//     cannot end mid-test, so their copies make a store only when at least
//     10 s are left of the minute, waiting for the next one otherwise.
//   - A refused request counts nothing. ulule counts it (its counter keeps
//     growing past Limit); either way it is refused until the window ends.
//   - Increment(count) is all or none: when count does not fit, nothing is
//     counted, Reached is true and Remaining says what is left (ulule adds
//     count anyway and reports 0). Increment(0) is Peek.
//   - Reset is the window's end in Unix seconds, exact for every
//     whole-second Period (ulule's windows end on the millisecond of the
//     first hit plus Period, and its Reset rounds down, up to a second
//     before the end); with nothing counted, and after Reset, it is now
//     (ulule: now plus one Period).
//   - Bad input is refused before anything is sent: a negative count
//     (ulule's INCRBY hands quota back) or one above 1e9 (ErrCount), a
//     negative Limit or one above 1e9, or a Period that is not a whole
//     number of milliseconds from 1 ms to 1e11 ms (ErrRate). A Limit of 0
//     refuses every request without a round trip, as ulule's counting
//     does.
//   - A call carries its context's deadline: one that Redis runs at or
//     after it (go-redis sending it again after a read timeout, a server
//     that stalled with it queued) counts nothing and fails with an error
//     matching bindings.ErrExpired, where ulule counts it. The deadline is an
//     instant on this process's clock judged by Redis's TIME: keep the two
//     clocks in step (NTP holds them within milliseconds).
//   - The client is any go-redis v9 client (Client, ClusterClient, Ring,
//     UniversalClient): this store needs script calls and DEL, not ulule's
//     Get, Set, Watch and SetNX.
package redis
