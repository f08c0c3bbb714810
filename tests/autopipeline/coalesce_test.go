package autopipeline

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/scriptingtest"
)

// ratelimit's batches of a hot key go through the AutoPipeliner as
// commands of its own, on both of its faces: the burst admitted exactly,
// in fewer calls than requests.
func TestCoalescing(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	for name, ap := range faces(t, rdb) {
		t.Run(name, func(t *testing.T) { scriptingtest.Coalescing(t, ap, rdb) })
	}
}
