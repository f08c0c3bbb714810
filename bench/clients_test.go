package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	rbindings "github.com/redlimit/redlimit/clients/rueidis/bindings"
	rueidisscripter "github.com/redlimit/redlimit/clients/rueidis/scripter"
	vbindings "github.com/redlimit/redlimit/clients/valkey/bindings"
	valkeyscripter "github.com/redlimit/redlimit/clients/valkey/scripter"
	"github.com/redlimit/redlimit/ratelimit"
)

// otherClients are the rows over rueidis and valkey-go, each through its
// adapter (clients/*/scripter), as a user opens it: default options, so
// the client pipelines concurrent callers' commands on shared connections.
type otherClients struct {
	rueidis, valkey ratelimit.Client
	// rueidisFlush is rueidis with MaxFlushDelay 20 µs: its writer waits
	// that long after a write for more commands to send with the next.
	rueidisFlush ratelimit.Client
	// rueidisClient and valkeyClient are the clients themselves, for the
	// floor sent natively (floor_rueidis_native: set beside floor_rueidis,
	// the adapter's own cost, building the command and decoding the reply)
	// and for GCRA through each client's own generated bindings
	// (bindings_gcra_rueidis, bindings_gcra_valkey: set beside
	// redlimit_gcra_rueidis and redlimit_gcra_valkey, what ratelimit and
	// the adapter cost together).
	rueidisClient rueidis.Client
	valkeyClient  valkey.Client
}

func openOtherClients(b *testing.B, sent *sentCounter) otherClients {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rc.Close)
	rf, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, MaxFlushDelay: 20 * time.Microsecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rf.Close)
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(vc.Close)
	return otherClients{
		rueidis:       counting{rueidisscripter.New(rc), sent},
		rueidisFlush:  counting{rueidisscripter.New(rf), sent},
		valkey:        counting{valkeyscripter.New(vc), sent}, // the same type: both are internal/scripting's
		rueidisClient: rc,
		valkeyClient:  vc,
	}
}

// counting counts the scripts sent through an adapter (whose commands no
// go-redis hook sees), and passes every method on, Process (the bindings'
// way of sending) and Del included.
type counting struct {
	*rueidisscripter.Scripter
	sent *sentCounter
}

func (c counting) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "eval")
	return c.Scripter.Eval(ctx, script, keys, args...)
}

func (c counting) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "evalsha")
	return c.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (c counting) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "eval_ro")
	return c.Scripter.EvalRO(ctx, script, keys, args...)
}

func (c counting) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.sent.addName(ctx, "evalsha_ro")
	return c.Scripter.EvalShaRO(ctx, sha, keys, args...)
}

func (c counting) Process(ctx context.Context, cmd redis.Cmder) error {
	c.sent.addName(ctx, cmd.Name())
	return c.Scripter.Process(ctx, cmd)
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

// ourKey is the Redis key ratelimit gives key under oursPrefix, for the
// rows that call the bindings themselves: the same key, the same state.
func ourKey(key string) string { return oursPrefix + "{" + key + "}" }

// rueidisGCRA is gcra.lua through clients/rueidis/bindings, as ratelimit
// sends a lone decision (a batch of one: the quota, a cost of 1, the
// server's clock, no deadline).
func rueidisGCRA(c rueidis.Client, q quota, sent *sentCounter) limiter {
	p := rbindings.GCRAParams{Burst: q.burst, Rate: q.rate, Period: q.period, Take: rbindings.GCRATakeAll, Requests: []rbindings.GCRARequest{{Cost: 1}}}
	return limiter{"bindings_gcra_rueidis", "rate", func(ctx context.Context, key string) (bool, bool, error) {
		sent.addName(ctx, "evalsha")
		r, err := rbindings.GCRA(ctx, c, []string{ourKey(key)}, p)
		return err == nil && r.Decisions[0].Allowed == 1, false, err
	}}
}

// valkeyGCRA is the same through clients/valkey/bindings.
func valkeyGCRA(c valkey.Client, q quota, sent *sentCounter) limiter {
	p := vbindings.GCRAParams{Burst: q.burst, Rate: q.rate, Period: q.period, Take: vbindings.GCRATakeAll, Requests: []vbindings.GCRARequest{{Cost: 1}}}
	return limiter{"bindings_gcra_valkey", "rate", func(ctx context.Context, key string) (bool, bool, error) {
		sent.addName(ctx, "evalsha")
		r, err := vbindings.GCRA(ctx, c, []string{ourKey(key)}, p)
		return err == nil && r.Decisions[0].Allowed == 1, false, err
	}}
}
