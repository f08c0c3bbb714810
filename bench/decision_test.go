package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// A scenario is a load pattern and the quota every limiter gets for it.
type scenario struct {
	name  string
	q     quota
	fresh bool // every call on a key of its own; else every call on one key
}

var scenarios = []scenario{
	// One key far below its limit: every call is admitted and writes. The
	// window limiters admit 1000 per 1 ms window (the sliding log keeps
	// one entry per admitted call, so its window stays short).
	{"hot-allow", quota{rate: 1e6, burst: 1e6, period: time.Second, windowLimit: 1000, windowLen: time.Millisecond}, false},
	// One key over its limit: after the first 100, nearly every call is
	// denied (a flood from one client).
	{"hot-deny", newQuota(100, 100, time.Second), false},
	// Every call on a key never seen before, from 100 000 names: every call
	// creates a key.
	{"distinct", newQuota(100, 100, time.Second), true},
}

// distinctKeys is how many key names the distinct scenario and the memory
// test use, the same names for every limiter.
const distinctKeys = 100000

func keyName(i int) string { return fmt.Sprintf("user:%06d", i) }

var keyNames = func() []string {
	out := make([]string, distinctKeys)
	for i := range out {
		out[i] = keyName(i)
	}
	return out
}()

// callers are the numbers of goroutines each scenario runs at; the
// AutoPipeliner rows run only where there is something to coalesce.
var callers = []int{1, 16, 64}

// decisionRun (-decision.run) keeps the rows whose "scenario=S/g=G/impl=I"
// it matches; the others are neither announced nor run. A -bench filter
// would skip them after their "# bench-expect" line, which cmd/benchtable
// then counts as missing (make bench-keys runs the distinct rows alone).
var decisionRun *regexp.Regexp

func init() {
	flag.Func("decision.run", "run only the BenchmarkDecision rows whose scenario=S/g=G/impl=I matches this regexp", func(s string) (err error) {
		decisionRun, err = regexp.Compile(s)
		return err
	})
}

// impl is one row: a limiter made afresh for every run (a deny cache
// starts empty), and the callers it runs at.
type impl struct {
	name     string
	make     func() limiter
	pipeline bool // runs only with several callers
	only64   bool // runs only at 64 callers
}

// BenchmarkDecision times one decision of cost 1 per op, as
// BenchmarkDecision/scenario=S/g=G/impl=I: every scenario at 1, 16 and 64
// goroutines (g), for the EVALSHA floor, redlimit's six scripts (plain,
// over go-redis's AutoPipeliner "_ap", with the deny cache "_cache", over
// rueidis and valkey-go, and unbatched "_nobatch"), and the peers
// (redis_rate also over the AutoPipeliner).
//
// Besides ns/op (wall time per decision; with g > 1 the inverse of
// throughput), B/op and allocs/op (every goroutine of the process: the
// AutoPipeliner's own count too) it reports:
//
//   - srv-cmd-us/op: the time inside the commands the limiter sent (INFO
//     commandstats, each command charged at its mean over the run);
//   - srv-cpu-us/op: the redis-server process's CPU (INFO cpu), which adds
//     the socket reads and writes;
//   - cli-cpu-us/op: this process's CPU (getrusage), the client side: on
//     2 cores that the client and the server share, what one side spends
//     the other cannot;
//   - cmds/op: commands the client sent per decision;
//   - p50-us, p99-us: latency of one decision;
//   - cached/op and cmds/cached (deny cache rows): the share of decisions
//     the cache answered, and the commands those decisions sent;
//   - errs/op: failed decisions.
//
// Run it as several processes of -count 1 (make bench), not as one
// -count N: -count repeats each sub-benchmark back to back, so a slow spell
// of the machine would land on a few limiters only.
func BenchmarkDecision(b *testing.B) {
	ctx := context.Background()
	c, sent := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	if err := floorScript.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	if err := bindings.LoadFunctions(ctx, c); err != nil {
		b.Fatal(err)
	}
	fc := bindings.WithFunctions(c)
	ap, err := c.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ap.Close() })
	warmPool(b, c)
	other := openOtherClients(b, sent)

	for _, sc := range scenarios {
		impls := []impl{
			{name: "floor", make: func() limiter { return floor(c, "floor") }},
			{name: "floor_ap", make: func() limiter { return floor(ap, "floor_ap") }, pipeline: true},
		}
		// redlimit's rows: each variant is the six scripts (or those it
		// names) as ratelimit runs them over one client. rueidis and
		// valkey-go pipeline by default; over valkey-go (the rueidis adapter
		// under another import path), GCRA and the token bucket (all six in
		// the distinct scenario at 64 goroutines); GCRA over rueidis with a
		// MaxFlushDelay of 20 µs.
		//
		// The "_nobatch" rows are the same with ratelimit.WithoutCoalescing:
		// each decision a script call of its own, no batching of a hot key's
		// requests nor of other keys'. GCRA and the token bucket have them
		// everywhere; in the distinct scenario at 64 goroutines every
		// algorithm has one over each client (and over valkey-go every
		// algorithm runs there), so each batched row has its unbatched twin
		// in the same run.
		coalescing := []string{"gcra", "token_bucket"} // the algorithms that coalesced first
		variants := []ourVariant{
			{plain, c, false, nil, false},
			{variant{suffix: "_ap"}, ap, true, nil, false},
			{withCache, c, false, nil, false},
			{variant{suffix: "_rueidis"}, other.rueidis, true, nil, false},
			{variant{suffix: "_valkey"}, other.valkey, true, coalescing, true},
			{variant{suffix: "_flush20us_rueidis"}, other.rueidisFlush, true, []string{"gcra"}, false},
			{variant{"_nobatch", withoutCoalescing}, c, false, coalescing, true},
			{variant{"_nobatch_rueidis", withoutCoalescing}, other.rueidis, true, []string{"gcra"}, true},
			{variant{"_nobatch_valkey", withoutCoalescing}, other.valkey, true, []string{}, true},
		}
		for _, v := range variants {
			for i, l := range ours(v.c, sc.q, false, v.variant) {
				everywhere := v.only == nil || slices.Contains(v.only, strings.TrimSuffix(strings.TrimPrefix(l.name, "redlimit_"), v.suffix))
				if !everywhere && !(v.distinct64 && sc.fresh) {
					continue
				}
				impls = append(impls, impl{name: l.name, pipeline: v.pipeline, only64: !everywhere, make: func() limiter {
					return ours(v.c, sc.q, false, v.variant)[i]
				}})
			}
		}
		// The floor through the adapters and natively over rueidis, and
		// GCRA through each client's own generated bindings.
		impls = append(impls,
			impl{name: "floor_rueidis", pipeline: true, make: func() limiter { return floor(other.rueidis, "floor_rueidis") }},
			impl{name: "floor_rueidis_native", pipeline: true, make: func() limiter { return nativeFloor(other.rueidisClient, sent) }},
			impl{name: "floor_valkey", pipeline: true, make: func() limiter { return floor(other.valkey, "floor_valkey") }},
			impl{name: "bindings_gcra_rueidis", pipeline: true, make: func() limiter { return rueidisGCRA(other.rueidisClient, sc.q, sent) }},
			impl{name: "bindings_gcra_valkey", pipeline: true, make: func() limiter { return valkeyGCRA(other.valkeyClient, sc.q, sent) }})
		// GCRA and the token bucket through the Functions library (FCALL),
		// to set beside the same scripts through EVALSHA.
		for i, l := range ours(fc, sc.q, false, viaFunctions) {
			if l.name == "redlimit_gcra_fcall" || l.name == "redlimit_token_bucket_fcall" {
				impls = append(impls, impl{name: l.name, make: func() limiter {
					return ours(fc, sc.q, false, viaFunctions)[i]
				}})
			}
		}
		ps, err := peers(c, sc.q)
		if err != nil {
			b.Fatal(err)
		}
		for i, p := range ps {
			impls = append(impls, impl{name: p.name, make: func() limiter { return ps[i] }})
		}
		impls = append(impls, impl{name: "redis_rate_ap", pipeline: true, make: func() limiter {
			return redisRate(ap, sc.q, "redis_rate_ap")
		}})

		// Each process starts every group at a random row, so a machine
		// that slows down during a pass does not always hurt the same
		// ones; make bench runs six passes and takes the medians. A row
		// without batching runs next to its batched twin, the two in a
		// random order: their ratio (cmd/benchtable's keys table) then
		// compares runs a second apart, not a pass apart, on a machine
		// whose load drifts.
		units := twins(impls)
		for _, g := range callers {
			start := rand.IntN(len(units))
			for i := range units {
				unit := units[(start+i)%len(units)]
				if len(unit) == 2 && rand.IntN(2) == 0 {
					unit = []impl{unit[1], unit[0]}
				}
				for _, im := range unit {
					if im.pipeline && g == 1 || im.only64 && g != 64 {
						continue
					}
					name := fmt.Sprintf("scenario=%s/g=%d/impl=%s", sc.name, g, im.name)
					if decisionRun != nil && !decisionRun.MatchString(name) {
						continue
					}
					expect("decision", "scenario", sc.name, "g", g, "impl", im.name)
					b.Run(name, func(b *testing.B) {
						benchDecisions(b, ctx, c, sent, im.make(), sc, g)
					})
				}
			}
		}
	}
}

// twins groups impls into units of one row, or of a batched row and its
// twin without batching ("redlimit_gcra_rueidis" and
// "redlimit_gcra_nobatch_rueidis"), in the order of their first rows.
func twins(impls []impl) [][]impl {
	var units [][]impl
	at := map[string]int{} // a batched row's name -> its unit
	for _, im := range impls {
		if !strings.Contains(im.name, "_nobatch") {
			at[im.name] = len(units)
			units = append(units, []impl{im})
		}
	}
	for _, im := range impls {
		if !strings.Contains(im.name, "_nobatch") {
			continue
		}
		if i, ok := at[strings.Replace(im.name, "_nobatch", "", 1)]; ok {
			units[i] = append(units[i], im)
		} else {
			units = append(units, []impl{im})
		}
	}
	return units
}

// ourVariant is a set of redlimit's rows: a variant over a client.
type ourVariant struct {
	variant
	c        ratelimit.Client
	pipeline bool     // runs only with several callers
	only     []string // the algorithms it runs everywhere; nil for all six
	// distinct64: the algorithms that only leaves out run too, in the
	// distinct scenario at 64 goroutines alone.
	distinct64 bool
}

// warmPool opens a connection for every caller, so that no run pays for
// dialling.
func warmPool(b *testing.B, c *redis.Client) {
	var wg sync.WaitGroup
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Ping(context.Background())
		}()
	}
	wg.Wait()
}

func benchDecisions(b *testing.B, ctx context.Context, c *redis.Client, sent *sentCounter, l limiter, sc scenario, g int) {
	// Every run starts from an empty server (the scripts stay cached), so
	// the distinct scenario's keys are all new and no run pays for the
	// expiry of another's.
	if err := c.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	keyOf := func(i int64) string {
		if sc.fresh {
			return keyNames[i%distinctKeys]
		}
		return "user:hot"
	}
	// One call first, on a key of its own, so every script is cached and
	// the limiter's own setup is done.
	if _, _, err := l.decide(ctx, "warmup"); err != nil {
		b.Fatalf("%s: %v", l.name, err)
	}
	before, err := readStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	sent.reset()
	lat := make([]time.Duration, b.N)
	var (
		next, errs, cached, cachedCmds atomic.Int64
		firstErr                       firstError
	)
	loop := func(more func() bool) {
		var n atomic.Int64 // this caller's commands
		ctx := context.WithValue(ctx, callCounter{}, &n)
		for more() {
			i := next.Add(1) - 1
			sentBefore := n.Load()
			t0 := time.Now()
			_, hit, err := l.decide(ctx, keyOf(i))
			lat[i] = time.Since(t0)
			if err != nil {
				errs.Add(1)
				firstErr.set(err)
			}
			if hit {
				cached.Add(1)
				cachedCmds.Add(n.Load() - sentBefore)
			}
		}
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	if g == 1 {
		i := 0
		loop(func() bool { i++; return i <= b.N })
	} else {
		b.SetParallelism((g + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) { loop(pb.Next) })
	}
	b.StopTimer()
	cli := processCPU() - cpu0
	counts := sent.snapshot()
	after, err := readStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	cmd, cpu := serverCost(before, after, counts, b.N)
	var total int64
	for _, n := range counts {
		total += n
	}
	slices.Sort(lat)
	b.ReportMetric(cmd, "srv-cmd-us/op")
	b.ReportMetric(cpu, "srv-cpu-us/op")
	b.ReportMetric(float64(cli.Microseconds())/float64(b.N), "cli-cpu-us/op")
	b.ReportMetric(float64(total)/float64(b.N), "cmds/op")
	b.ReportMetric(float64(lat[b.N/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(lat[(b.N*99)/100].Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errs/op")
	if n := cached.Load(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "cached/op")
		b.ReportMetric(float64(cachedCmds.Load())/float64(n), "cmds/cached")
	}
	if e := errs.Load(); e > 0 {
		b.Logf("%d of %d decisions failed, first: %v", e, b.N, firstErr.get())
	}
}
