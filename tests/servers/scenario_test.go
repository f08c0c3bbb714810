package servers

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/tests/scenario"
	"github.com/redlimit/redlimit/tests/tier"
)

// tiers are the servers every scenario table runs on over go-redis (see
// tests/tier): miniredis on the table's own clock, a real redis-server in
// RESP2 and RESP3, the cluster, and the Functions library on both.
func tiers() []struct {
	name string
	open func(t *testing.T) tier.Tier
} {
	real := func(name string, c fnClient, viaLibrary bool) tier.Tier {
		return tier.Tier{Name: name, ViaLibrary: viaLibrary, Scripts: c, State: c}
	}
	return []struct {
		name string
		open func(t *testing.T) tier.Tier
	}{
		{"miniredis", func(t *testing.T) tier.Tier {
			m := miniredis.RunT(t)
			m.SetTime(time.UnixMicro(scenario.T0))
			m.ClockTTL(true)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			return tier.Tier{Name: "miniredis", Exact: true, Scripts: c, State: c,
				SetTime: func(us int64) { m.SetTime(time.UnixMicro(us)) }}
		}},
		{"redis-resp2", func(t *testing.T) tier.Tier { return real("redis-resp2", standalone(t, 2), false) }},
		{"redis-resp3", func(t *testing.T) tier.Tier { return real("redis-resp3", standalone(t, 3), false) }},
		{"cluster", func(t *testing.T) tier.Tier { return real("cluster", cluster(t), false) }},
		{"redis-fcall", func(t *testing.T) tier.Tier {
			return real("redis-fcall", withLibrary(t, standalone(t, 3)), true)
		}},
		{"cluster-fcall", func(t *testing.T) tier.Tier {
			return real("cluster-fcall", withLibrary(t, cluster(t)), true)
		}},
	}
}

// withLibrary loads the Functions library on every primary of c.
func withLibrary(t *testing.T, c fnClient) fnClient {
	t.Helper()
	if err := bindings.LoadFunctions(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScenarioTiers runs every scenario table on every tier and, step by
// step, against the gopher-lua tier given the very same arguments: all tiers
// must return identical replies.
func TestScenarioTiers(t *testing.T) {
	for _, tr := range tiers() {
		t.Run(tr.name, func(t *testing.T) { tier.Run(t, tr.open(t)) })
	}
}

// The runner's helpers that this package's other tests use too.
var (
	sameError = tier.SameError
	normalize = tier.Normalize
	scripts   = tier.Scripts
)

func serverTime(t *testing.T, c redis.Scripter) int64 { return tier.ServerTime(t, c.(redis.Cmdable)) }
