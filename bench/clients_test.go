package bench

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	rueidisscripter "github.com/redlimit/redlimit/clients/rueidis/scripter"
	valkeyscripter "github.com/redlimit/redlimit/clients/valkey/scripter"
	"github.com/redlimit/redlimit/ratelimit"
)

// otherClients are the rows over rueidis and valkey-go, each through its
// adapter (clients/*/scripter), as a user opens it: default options, so
// the client pipelines concurrent callers' commands on shared connections.
type otherClients struct {
	rueidis, valkey ratelimit.Client
	// rueidisClient is the client itself, for the floor sent natively
	// (floor_rueidis_native): set beside floor_rueidis, the adapter's own
	// cost (building the command, decoding the reply).
	rueidisClient rueidis.Client
}

func openOtherClients(b *testing.B, sent *sentCounter) otherClients {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rc.Close)
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(vc.Close)
	return otherClients{
		rueidis:       counting{rueidisscripter.New(rc), sent},
		valkey:        counting{valkeyscripter.New(vc), sent},
		rueidisClient: rc,
	}
}

// counting counts the scripts sent through a Scripter that is not a
// go-redis client (whose hook counts them otherwise).
type counting struct {
	ratelimit.Client
	sent *sentCounter
}

func (c counting) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "eval")
	return c.Client.Eval(ctx, script, keys, args...)
}

func (c counting) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "evalsha")
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

func (c counting) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "eval_ro")
	return c.Client.EvalRO(ctx, script, keys, args...)
}

func (c counting) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "evalsha_ro")
	return c.Client.EvalShaRO(ctx, sha, keys, args...)
}

// nativeFloor is the floor sent through rueidis's own API: EVALSHA of
// return 1 with the key, the reply read as an integer.
func nativeFloor(c rueidis.Client, sent *sentCounter) limiter {
	sha := floorScript.Hash()
	return limiter{"floor_rueidis_native", "", func(ctx context.Context, key string) (bool, bool, error) {
		sent.addName(ctx, "evalsha")
		_, err := c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Build()).AsInt64()
		return err == nil, false, err
	}}
}
