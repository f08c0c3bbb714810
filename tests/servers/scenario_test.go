package servers

import (
	"context"
	"strings"
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

// TestScenarioTiersMultiKey runs every scenario table through each
// script's multi-key form (bindings.MultiKeyForm), every step as the
// form's one call or between two calls of the same ARGV on other keys of
// its slot, on miniredis, a real redis-server over RESP2 and RESP3 and the
// cluster: each element must be what the gopher-lua tier answers that
// call of its own, an error reply (BADARG, WRONGTYPE, BADSTATE) as that
// call's own redis.Error, and the table's keys must be as the gopher-lua
// tier leaves them.
func TestScenarioTiersMultiKey(t *testing.T) {
	for _, tr := range tiers() {
		if strings.HasSuffix(tr.name, "fcall") {
			continue // the form is a script: EVALSHA, not the library
		}
		modes := []tier.MultiKeyMode{tier.MultiKeyAlone, tier.MultiKeyAmong}
		if tr.name == "redis-resp2" || tr.name == "cluster" {
			modes = modes[1:] // RESP3 and miniredis take it alone too
		}
		for _, mode := range modes {
			name := tr.name + map[tier.MultiKeyMode]string{tier.MultiKeyAlone: "/alone", tier.MultiKeyAmong: "/among"}[mode]
			t.Run(name, func(t *testing.T) {
				x := tr.open(t)
				x.Name += "-multikey"
				x.MultiKey = mode
				tier.Run(t, x)
			})
		}
	}
}

// The runner's helpers that this package's other tests use too.
var (
	sameError = tier.SameError
	normalize = tier.Normalize
	scripts   = tier.Scripts
)

func serverTime(t *testing.T, c redis.Scripter) int64 { return tier.ServerTime(t, c.(redis.Cmdable)) }
