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
