package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// BenchmarkCoalescing sets ratelimit's coalescing of a key's concurrent
// decisions (the default for GCRA and the token bucket) beside the same
// limiters WithoutCoalescing ("_solo"), the EVALSHA floor and the peers
// whose decisions per second the targets of issue 25 are set against
// (ulule, redis_rate), one run for all: every scenario at 1 and 64
// goroutines, with BenchmarkDecision's metrics (srv-cpu-us/op is Redis's
// CPU per decision, p50-us and p99-us the latency of one). make bench runs
// BenchmarkDecision, whose redlimit rows coalesce too; this one is for
// comparing the two modes of one limiter side by side:
//
//	cd bench && go test -run '^$' -bench BenchmarkCoalescing -benchtime 20000x
func BenchmarkCoalescing(b *testing.B) {
	ctx := context.Background()
	c, sent := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	if err := floorScript.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	warmPool(b, c)
	solo := variant{"_solo", []ratelimit.Option{ratelimit.WithoutCoalescing()}}
	for _, sc := range scenarios {
		impls := []impl{{name: "floor", make: func() limiter { return floor(c, "floor") }}}
		for _, v := range []variant{plain, solo} {
			for i, l := range ours(c, sc.q, false, v) {
				if l.name == "redlimit_gcra"+v.suffix || l.name == "redlimit_token_bucket"+v.suffix {
					impls = append(impls, impl{name: l.name, make: func() limiter { return ours(c, sc.q, false, v)[i] }})
				}
			}
		}
		ps, err := peers(c, sc.q)
		if err != nil {
			b.Fatal(err)
		}
		for i, p := range ps {
			if p.name == "ulule_limiter" || p.name == "redis_rate" {
				impls = append(impls, impl{name: p.name, make: func() limiter { return ps[i] }})
			}
		}
		for _, g := range []int{1, 64} {
			for _, im := range impls {
				b.Run(fmt.Sprintf("scenario=%s/g=%d/impl=%s", sc.name, g, im.name), func(b *testing.B) {
					benchDecisions(b, ctx, c, sent, im.make(), sc, g)
				})
			}
		}
	}
}
