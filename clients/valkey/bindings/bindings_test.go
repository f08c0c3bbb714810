// Code generated from clients/rueidis/bindings/bindings_test.go by TestSameAsRueidis (go test -update). DO NOT EDIT.

package bindings_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/redlimit/redlimit/clients/valkey/bindings"
	"github.com/redlimit/redlimit/clients/valkey/scripter"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/tests/tier"
)

// calls are the generated calls, by script, for the scenario runner.
var calls = map[string]any{
	"token_bucket":           bindings.TokenBucket,
	"fixed_window":           bindings.FixedWindow,
	"sliding_window_log":     bindings.SlidingWindowLog,
	"sliding_window_counter": bindings.SlidingWindowCounter,
	"leaky_bucket":           bindings.LeakyBucket,
	"gcra":                   bindings.GCRA,
	"multi":                  bindings.Multi,
	"concurrency":            bindings.Concurrency,
}

func open(t testing.TB, addrs []string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func argError(err error) bool {
	var ae *bindings.ArgError
	return errors.As(err, &ae)
}

var sentinels = map[string]error{"BADARG": bindings.ErrBadArg, "WRONGTYPE": bindings.ErrWrongType, "BADSTATE": bindings.ErrBadState, "EXPIRED": bindings.ErrExpired}

// Every scenario table through the bindings luagen -client valkey wrote,
// step by step beside the gopher-lua tier, on a redis-server and a
// three-master cluster of their own (raw steps go through the scripter).
func TestScenarios(t *testing.T) {
	addr := redisserver.Start(t)
	ref := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { ref.Close() })
	c := open(t, []string{addr})
	tier.Run(t, tier.Tier{Name: "valkey", Scripts: scripter.New(c), State: ref,
		Typed: tier.Reflected(calls, c, argError), Sentinels: sentinels})

	t.Run("cluster", func(t *testing.T) {
		addrs := redisserver.NewCluster(t)
		cref := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { cref.Close() })
		cc := open(t, addrs)
		tier.Run(t, tier.Tier{Name: "valkey-cluster", Scripts: scripter.New(cc), State: cref,
			Typed: tier.Reflected(calls, cc, argError), Sentinels: sentinels})
	})
}

// A call survives SCRIPT FLUSH (EVALSHA, NOSCRIPT, EVAL), singly and in a
// Batch; an error reply is a *ScriptError matching its sentinel; an
// argument out of range is an *ArgError and nothing is sent; keys of two
// slots in a cluster are the server's CROSSSLOT, not a panic.
func TestCalls(t *testing.T) {
	ctx := context.Background()
	addr := redisserver.Start(t)
	ref := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { ref.Close() })
	c := open(t, []string{addr})
	one := []bindings.GCRARequest{{Cost: 1}}
	p := bindings.GCRAParams{Burst: 2, Rate: 1, Period: time.Hour, Take: bindings.GCRATakeAll, Requests: one}
	for i := 0; i < 2; i++ {
		ref.ScriptFlush(ctx)
		r, err := bindings.GCRA(ctx, c, []string{"k1"}, p)
		if err != nil || r.Decisions[0].Allowed != 1 || r.Decisions[0].Remaining != 1-int64(i) {
			t.Fatalf("call %d after SCRIPT FLUSH: %+v, %v", i, r, err)
		}
	}
	ref.ScriptFlush(ctx)
	b := bindings.NewBatch()
	a := b.GCRA([]string{"k2"}, p)
	bad := b.GCRA([]string{"k2"}, bindings.GCRAParams{Burst: 0, Rate: 1, Period: time.Hour, Take: bindings.GCRATakeAll, Requests: one})
	peek := b.SlidingWindowLog("k3", bindings.SlidingWindowLogParams{Limit: 5, Window: time.Minute, Cost: 0})
	if err := b.Exec(ctx, c); !argError(err) {
		t.Errorf("Batch.Exec: %v, want the ArgError", err)
	}
	if r, err := a.Result(); err != nil || r.Decisions[0].Allowed != 1 {
		t.Errorf("batched call: %+v, %v", r, err)
	}
	if _, err := bad.Result(); !argError(err) {
		t.Errorf("batched bad call: %v", err)
	}
	if r, err := peek.Result(); err != nil || r.Remaining != 5 {
		t.Errorf("batched peek: %+v, %v", r, err)
	}

	ref.Set(ctx, "str", "not a state", 0)
	if _, err := bindings.GCRA(ctx, c, []string{"str"}, p); !errors.Is(err, bindings.ErrBadState) {
		t.Errorf("a foreign string: %v, want ErrBadState", err)
	}
	// The header's pattern refuses a lease id before sending.
	if _, err := bindings.Concurrency(ctx, c, "lease", bindings.ConcurrencyParams{Op: "acquire", Lease: "x y", Limit: 1, TTL: time.Second}); !argError(err) {
		t.Errorf("a bad lease id: %v, want an ArgError", err)
	}
	if _, err := bindings.GCRA(ctx, c, []string{"k4"}, bindings.GCRAParams{Burst: 5e10, Rate: 1, Period: time.Hour, Take: bindings.GCRATakeAll, Requests: one}); !argError(err) {
		t.Errorf("burst 5e10: %v, want an ArgError", err)
	}
	if ref.Exists(ctx, "k4").Val() != 0 {
		t.Errorf("a refused call reached the server")
	}

	addrs := redisserver.NewCluster(t)
	cc := open(t, addrs)
	if _, err := bindings.Multi(ctx, cc, []string{"{a}x", "{b}y"}, bindings.MultiParams{Cost: 1, Limits: []bindings.MultiLimit{{Burst: 1, Rate: 1, Period: time.Second}, {Burst: 1, Rate: 1, Period: time.Second}}}); err == nil || !valkeyErr(err, "CROSSSLOT") {
		t.Errorf("keys of two slots: %v, want CROSSSLOT", err)
	}
	if err := bindings.LoadAll(ctx, cc); err != nil {
		t.Errorf("LoadAll on the cluster: %v", err)
	}
}

func valkeyErr(err error, prefix string) bool {
	var re *valkey.ValkeyError
	return errors.As(err, &re) && len(re.Error()) >= len(prefix) && re.Error()[:len(prefix)] == prefix
}
