package ratelimit_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/testredis"
)

// t0 is where the tests' clocks start (testredis.T0).
var t0 = testredis.T0

// frozen is testredis.Frozen with the names these tests use.
type frozen struct {
	*testredis.Frozen
	rdb *redis.Client
}

func newFrozen(t testing.TB) *frozen {
	f := testredis.NewFrozen(t)
	return &frozen{Frozen: f, rdb: f.RDB}
}

func (f *frozen) advance(d time.Duration) { f.Advance(d) }

// exampleRedis is testredis.Example.
func exampleRedis() *redis.Client { return testredis.Example() }
