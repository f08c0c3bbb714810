package ratelimit_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// Every go-redis client is a ratelimit.Client, which states all a Limiter
// calls (the scripts, and DEL for Reset); the compiler holds it. (The
// AutoPipeliner, which needs a newer Go, is held so in tests/autopipeline,
// and the rueidis and valkey-go scripters in internal/scriptingtest.)
var _ = []ratelimit.Client{
	(*redis.Client)(nil),
	(*redis.ClusterClient)(nil),
	(*redis.Ring)(nil),
	redis.UniversalClient(nil),
	(*bindings.FunctionsClient)(nil),
}

// Any of them works: a client, a cluster client, a ring, a
// UniversalClient. (The real cluster runs the scenario tables through this
// package in tests/servers.)
func TestClients(t *testing.T) {
	m1, m2 := miniredis.RunT(t), miniredis.RunT(t)
	m1.SetTime(t0) // frozen: no refill however slow the machine
	m2.SetTime(t0)
	clients := map[string]redis.UniversalClient{
		"client":    redis.NewClient(&redis.Options{Addr: m1.Addr()}),
		"cluster":   redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m1.Addr()}}),
		"ring":      redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": m1.Addr(), "b": m2.Addr()}}),
		"universal": redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{m2.Addr()}}),
	}
	for name, c := range clients {
		defer c.Close()
		for _, alg := range ratelimit.Algorithms() {
			a := newNamed(t, c, name+"-a-"+alg.String(), alg)
			b := newNamed(t, c, name+"-b-"+alg.String(), alg)
			both := mustAll(t, a, b)
			allowed := 0
			for i := 0; i < 12; i++ {
				d, err := a.Allow(ctx, "user}{1")
				if err != nil {
					t.Fatalf("%s %v: %v", name, alg, err)
				}
				bd, err := both.AllowN(ctx, "user}{1", 1)
				if err != nil {
					t.Fatalf("%s %v: All: %v", name, alg, err)
				}
				if d.Allowed {
					allowed++
				}
				if bd.Parts[0].Allowed {
					allowed++
				}
			}
			if allowed != 10 {
				t.Errorf("%s %v: %d allowed, want 10", name, alg, allowed)
			}
			if err := a.Reset(ctx, "user}{1"); err != nil {
				t.Errorf("%s %v: Reset: %v", name, alg, err)
			}
			if d, _ := a.Peek(ctx, "user}{1"); d.Remaining != 10 {
				t.Errorf("%s %v: after Reset %v", name, alg, d)
			}
		}
	}
}
