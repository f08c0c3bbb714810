package ratelimit

// Algorithms lists every algorithm, for the tests of package ratelimit_test.
func Algorithms() []Algorithm {
	as := make([]Algorithm, len(algorithmNames))
	for i := range algorithmNames {
		as[i] = Algorithm(i)
	}
	return as
}

// RedisKey is the Redis key that holds key's state, for the tests.
func (l *Limiter) RedisKey(key string) string { return l.redisKey(key) }

// Waiting is how many requests wait in l's coalescer for key (its limit's
// Redis key and its block's), for the tests of package ratelimit_test.
func Waiting(l *Limiter, key string) int {
	batches := l.path.validate.cache.lockout.fallback.batch.c
	if batches == nil {
		return 0
	}
	n := 0
	for _, rk := range []string{l.RedisKey(key), l.blockKey(key)} {
		s := batches.shard(rk)
		s.mu.Lock()
		if line := s.keys[rk]; line != nil {
			n += len(line.waiting)
		}
		s.mu.Unlock()
	}
	return n
}

// MaxLate is how many late calls l reads on at most; SetMaxLate sets it,
// for the tests of the bound.
func MaxLate() int64 { return maxLate }

func SetMaxLate(l *Limiter, n int64) { l.path.validate.cache.lockout.fallback.batch.send.late.max = n }
