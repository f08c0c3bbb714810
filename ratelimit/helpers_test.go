package ratelimit_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// t0 is where the tests' clocks start: a whole day after the epoch, so
// windows of any length up to a day start there.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// frozen is a miniredis whose clock moves only when told, with TTLs on the
// same clock (PITFALLS: TIME follows SetTime, not FastForward).
type frozen struct {
	*miniredis.Miniredis
	rdb *redis.Client
	now time.Time
}

func newFrozen(t testing.TB) *frozen {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(t0)
	m.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &frozen{Miniredis: m, rdb: rdb, now: t0}
}

func (f *frozen) advance(d time.Duration) {
	f.now = f.now.Add(d)
	f.SetTime(f.now)
}
