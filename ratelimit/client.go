package ratelimit

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// A Client is what a Limiter calls: the scripts, and DEL for Reset. Every
// go-redis client is one (*redis.Client, *redis.ClusterClient,
// *redis.Ring, redis.UniversalClient, the AutoPipeliner), and so are the
// rueidis and valkey-go scripters of the clients modules.
type Client interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}
