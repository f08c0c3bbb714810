package httplimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

var ctx = context.Background()

type frozen struct {
	*testredis.Frozen
	rdb *redis.Client
}

func newFrozen(t testing.TB) *frozen {
	f := testredis.NewFrozen(t)
	return &frozen{Frozen: f, rdb: f.RDB}
}

func (f *frozen) advance(d time.Duration) { f.Advance(d) }

func exampleRedis() *redis.Client { return testredis.Example() }

// newNamed is a GCRA limiter of 10 a second named name.
func newNamed(t testing.TB, rdb ratelimit.Client, name string, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(rdb, name, ratelimit.PerSecond(10), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustAll(t testing.TB, rules ...ratelimit.Rule) ratelimit.Rule {
	t.Helper()
	r, err := ratelimit.All(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// downClient talks to a port where no Redis listens, and gives up at once.
func downClient(t testing.TB) *redis.Client { return testredis.Down(t) }
