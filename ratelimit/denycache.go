package ratelimit

// The local deny cache (WithDenyCache). Redis told us a key is denied for
// cost c until now + RetryAfter; until then every request of cost c for
// that key would be denied again and change nothing, so the limiter can say
// so itself, with no round trip. It never admits, so it can never
// over-admit; what it can get wrong is denying a little longer than Redis
// would, and only in the cases the godoc of WithDenyCache lists.

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	keys "github.com/redlimit/redlimit/ratelimit/internal/key"
)

// maxCachedFor caps how long one cached denial is served, whatever its
// RetryAfter (a per-day limit can deny for hours). After it the next
// request asks Redis again, which costs one round trip a minute per denied
// key, and in return a Reset or a raised limit in another process, or a
// key deleted by hand, is seen within a minute, and the drift between this
// process's clock and the server's over one cached span stays far below the
// 60 s the scripts allow a caller clock (NTP slews a clock by at most 500
// ppm: 30 ms a minute).
const maxCachedFor = time.Minute

// denyShards is the number of independently locked parts of a cache that
// holds at least minShardedSize keys. BenchmarkDenyCache
// (denycache_internal_test.go) measured it on the 2-core machine of
// BENCHMARKS.md: a cached lookup at 64 goroutines takes about 50 ns with one
// lock or 16, on one key or 10 000 (two cores cannot contend much for one
// lock). The shards are for machines with more cores, where every core
// would otherwise queue on one lock; on a hot key every caller meets in
// one shard anyway. Small caches keep one lock, so that size/16 entries per
// shard do not make eviction coarse.
const (
	denyShards     = 16
	minShardedSize = 1024
)

// cached is the deny cache stage: a request the cache has a denial for is
// answered here; any other goes on, and Redis's answer is noted on its way
// back up.
type cached struct {
	c           *denyCache // nil without WithDenyCache
	callerClock bool       // WithClock
	lockout     lockout
}

func (s *cached) decide(ctx context.Context, a ask) (Decision, error) {
	d, ck := s.lookup(a)
	if d.Cached {
		return d, nil
	}
	d, seq, err := s.lockout.decide(ctx, a)
	s.note(a, ck, seq, d, err)
	return d, err
}

// A cacheCheck is what a request the cache did not answer needs to store
// Redis's denial: the cache's clock and epoch before it was sent.
type cacheCheck struct {
	ok    bool // the cache takes the answer
	at    int64
	epoch uint64
}

// lookup is the cache's Decision for a, if it has one (Cached), and the
// check to note Redis's answer with otherwise.
func (s *cached) lookup(a ask) (Decision, cacheCheck) {
	if s.c == nil {
		return Decision{}, cacheCheck{}
	}
	at, ok := s.c.clock(s.callerClock, a.now)
	if !ok {
		return Decision{}, cacheCheck{}
	}
	// The epoch is read before the lookup, and so before the request is
	// sent (see denyCache.epoch).
	ck := cacheCheck{ok: true, at: at, epoch: s.c.epoch.Load()}
	d, _ := s.c.lookup(a.key, a.cost, at, a.name, a.limit)
	return d, ck
}

// note keeps Redis's answer d to a, sent after check ck; seq is its
// coalescer ticket (0: none).
func (s *cached) note(a ask, ck cacheCheck, seq uint64, d Decision, err error) {
	if ck.ok && err == nil {
		s.c.note(a.key, a.cost, ck.at, ck.epoch, seq, d)
	}
}

type denyCache struct {
	seed   maphash.Seed
	shards []denyShard
	// base is the origin of the cache's clock when the limiter uses the
	// server's clock: this process's monotonic clock, which only measures
	// spans, and a RetryAfter is a span.
	base time.Time
	// epoch moves on every Reset. A denial is stored only if no Reset came
	// between reading the epoch (before its request was sent) and storing
	// it, so a Reset is never undone by a reply that was already on its way.
	epoch atomic.Uint64
}

type denyShard struct {
	mu      sync.Mutex
	entries map[string]denyEntry
	max     int
	_       [40]byte // keep shards' locks on separate cache lines
}

// denyEntry is one cached denial, in ns on the cache's clock.
type denyEntry struct {
	limit     Limit  // the limit it was denied under (Limiter.WithLimit copies share a cache)
	cost      int64  // the denied cost (1 for a peek); the entry answers this cost only
	at        int64  // when the denied request was sent
	until     int64  // the cache answers while at <= now < until
	retryAt   int64  // at + RetryAfter, what a cached RetryAfter counts down to
	resetAt   int64  // at + ResetAfter
	remaining int64  // Remaining as Redis answered it
	seq       uint64 // the answer's coalescer ticket; 0 for none
	lockedOut bool   // a lockout's denial: the cached one says so too
}

func newDenyCache(size int) *denyCache {
	n := 1
	if size >= minShardedSize {
		n = denyShards
	}
	c := &denyCache{seed: maphash.MakeSeed(), shards: make([]denyShard, n), base: time.Now()}
	for i := range c.shards {
		c.shards[i].max = size / n
		if i < size%n {
			c.shards[i].max++
		}
		c.shards[i].entries = map[string]denyEntry{}
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.String(c.seed, key)%uint64(len(c.shards))]
}

// clock reads the cache's clock, in ns: the caller clock the request is
// judged at when the limiter has one (so a test's fake clock moves the
// cache too), else the monotonic time since the cache was made. ok is false
// when the request is judged by the server's clock although the limiter has
// a clock (it returned the zero time.Time): such a request skips the cache.
func (c *denyCache) clock(callerClock bool, now time.Time) (ns int64, ok bool) {
	if !callerClock {
		return int64(time.Since(c.base)), true
	}
	if now.IsZero() {
		return 0, false
	}
	return now.UnixNano(), true
}

// lookup returns the cached Decision for a request of cost (0 peeks, which
// the scripts answer as a cost of 1) at now, if there is one.
//
// An entry answers the cost it was denied for and no other. A larger cost
// would be denied too (for all six algorithms a request that cannot pass
// cannot pass with a larger cost), but its RetryAfter cannot be known
// without Redis: for GCRA and the buckets the wait grows with the cost, for
// the sliding log it depends on which requests leave the window, and the
// cache does not invent a number that could be shorter than the real wait.
// A smaller cost may pass. So a key with requests of mixed costs keeps the
// newest denial's cost; Allow and Peek (both cost 1) share one.
func (c *denyCache) lookup(key string, cost, now int64, name string, limit Limit) (Decision, bool) {
	s := c.shard(key)
	s.mu.Lock()
	e, ok := s.entries[key]
	if ok && now >= e.until {
		delete(s.entries, key)
		ok = false
	}
	s.mu.Unlock()
	if !ok || now < e.at || max(cost, 1) != e.cost || e.limit != limit {
		return Decision{}, false
	}
	return Decision{
		Name:       name,
		Limit:      limit,
		Remaining:  e.remaining,
		RetryAfter: ceilMs(e.retryAt - now),
		ResetAfter: ceilMs(max(e.resetAt-now, 0)),
		Cached:     true,
		LockedOut:  e.lockedOut,
		Source:     sourceDenyCache,
	}, true
}

// note takes in d, Redis's answer to a request of cost sent at at (on the
// cache's clock) after the cache's epoch read epoch. A denial that can be
// served from the cache replaces key's entry. Any other answer from Redis
// drops the entry: an admission consumed what the entry's RetryAfter was
// computed without, and the newest answer about a key is the one to trust.
// (A cost that can never pass says nothing new and changes nothing.)
//
// seq is the coalescer's ticket for the request, 0 for none. The answers
// of one batch wake their callers together, who note them in any order;
// an answer with a ticket older than the entry's is one Redis ran before
// the entry's, and changes nothing. (Without tickets, answers to
// concurrent calls are taken in the order they are noted.)
func (c *denyCache) note(key string, cost, at int64, epoch, seq uint64, d Decision) {
	if d.Cause != nil || d.RetryAfter == Never {
		return
	}
	// A RetryAfter is whole milliseconds rounded up from the script's exact
	// µs, so Redis would admit the request up to 1 ms before at +
	// RetryAfter: the cache stops answering 1 ms early, and never denies
	// what Redis would admit. A wait of 1 ms or less is not cached. Keys
	// longer than a hash tag are not cached either, so an entry holds at
	// most keys.MaxTagLen bytes of key (a longer key is kept in Redis by its
	// hash).
	cache := !d.Allowed && d.RetryAfter > time.Millisecond && len(key) <= keys.MaxTagLen
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok && seq != 0 && seq < e.seq {
		return
	}
	if !cache || c.epoch.Load() != epoch {
		delete(s.entries, key)
		return
	}
	e := denyEntry{
		limit:     d.Limit,
		cost:      max(cost, 1),
		at:        at,
		until:     at + int64(min(d.RetryAfter-time.Millisecond, maxCachedFor)),
		retryAt:   at + int64(d.RetryAfter),
		resetAt:   at + int64(d.ResetAfter),
		remaining: d.Remaining,
		seq:       seq,
		lockedOut: d.LockedOut,
	}
	if _, ok := s.entries[key]; !ok && len(s.entries) >= s.max {
		s.evict(at)
	}
	if len(s.entries) < s.max {
		// A copy: the caller's key may share memory with a larger buffer
		// (a header, a request line) that the cache must not keep alive.
		s.entries[strings.Clone(key)] = e
	}
}

// evict makes room for one entry: every expired entry of a random sample
// goes, or else the sampled entry that expires first.
func (s *denyShard) evict(now int64) {
	var victim string
	var soonest int64
	seen, dropped := 0, false
	for k, e := range s.entries {
		switch {
		case now >= e.until || now < e.at:
			delete(s.entries, k)
			dropped = true
		case victim == "" || e.until < soonest:
			victim, soonest = k, e.until
		}
		if seen++; seen == evictSample {
			break
		}
	}
	if !dropped {
		delete(s.entries, victim)
	}
}

// forget drops key's entry and moves the epoch, so that no denial of a
// request sent before this call is stored after it.
func (c *denyCache) forget(key string) {
	s := c.shard(key)
	s.mu.Lock()
	c.epoch.Add(1)
	delete(s.entries, key)
	s.mu.Unlock()
}

// len counts the cached denials, expired ones included (for tests).
func (c *denyCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}
