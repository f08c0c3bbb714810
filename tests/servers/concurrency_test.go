package servers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
	"github.com/redlimit/redlimit/tests/scenario"
)

// load is one limiter configuration under concurrent load.
type load struct {
	script string
	args   []string // ARGV before cost and now (a batch script's three numbers and its word)
	// first is what a fresh key admits before any time has to pass: its
	// burst, capacity or limit.
	first int64
	// most is what the algorithm may admit over [start, end] (µs since the
	// epoch); least is what it must admit when calls come densely all
	// through [start, end], whatever order they reach Redis in.
	most, least func(start, end int64) float64
	why         string // why least is below most
}

// argv is the ARGV of one request of cost at now, with no deadline.
func (ld load) argv(cost, now string) []any {
	var out []any
	for _, a := range scenario.OneCall(ld.script, ld.args, cost, now, "0") {
		out = append(out, a)
	}
	return out
}

func perPeriod(burst, rate float64, period time.Duration) func(start, end int64) float64 {
	return func(start, end int64) float64 {
		return burst + rate*float64(end-start)/float64(period.Microseconds())
	}
}

// steps bounds a bucket that gains rate at once per whole period: a span
// sees at most one step more than it holds whole periods (plus extra).
func steps(burst, rate float64, period time.Duration, extra int64) func(start, end int64) float64 {
	return func(start, end int64) float64 {
		return burst + rate*float64((end-start)/period.Microseconds()+extra)
	}
}

// less takes n off a bound: the units that accrue in the last moments of a
// run, after its last calls (64 calls in flight span 6.4 ms of the virtual
// clock; GCRA turns late ones away, so up to two units may be left).
func less(f func(int64, int64) float64, n float64) func(int64, int64) float64 {
	return func(s, e int64) float64 { return f(s, e) - n }
}

// windows counts the epoch-aligned windows that [start, end] touches.
func windows(window time.Duration) func(start, end int64) float64 {
	w := window.Microseconds()
	return func(start, end int64) float64 { return float64(end/w - start/w + 1) }
}

// inside counts the epoch-aligned windows that lie wholly inside [start, end].
func inside(window time.Duration) func(start, end int64) float64 {
	w := window.Microseconds()
	return func(start, end int64) float64 { return float64(max(0, end/w-(start+w-1)/w)) }
}

func loads() []load {
	// The runs are not a whole number of windows, so the last window of a
	// saturated log has well started.
	const W = 350 * time.Millisecond
	fixed := func(s, e int64) float64 { return 50 * windows(W)(s, e) }
	// A rolling log admits limit, then limit again each time a window of
	// entries ages out: at most limit per started window.
	rolling := func(s, e int64) float64 { return 50 * float64((e-s)/W.Microseconds()+1) }
	return []load{
		{script: "token_bucket", args: []string{"20", "200", "1000", "smooth"}, first: 20, most: perPeriod(20, 200, time.Second),
			least: less(perPeriod(20, 200, time.Second), 3), why: "tokens that accrue after the last call"},
		{script: "token_bucket", args: []string{"50", "50", "250", "interval"}, first: 50, most: steps(50, 50, 250*time.Millisecond, 1),
			least: steps(50, 50, 250*time.Millisecond, -1), why: "the steps run on a grid from the first call; the last may not have come"},
		{script: "gcra", args: []string{"20", "200", "1000", "all"}, first: 20, most: perPeriod(20, 200, time.Second),
			least: less(perPeriod(20, 200, time.Second), 3), why: "capacity that accrues after the last call"},
		{script: "leaky_bucket", args: []string{"20", "200", "1000"}, first: 20, most: perPeriod(20, 200, time.Second),
			least: less(perPeriod(20, 200, time.Second), 3), why: "room that drains after the last call"},
		{script: "fixed_window", args: []string{"50", fmt.Sprint(W.Milliseconds())}, first: 50, most: fixed,
			least: func(s, e int64) float64 { return 50 * inside(W)(s, e) }, why: "windows the run only touches at its ends"},
		{script: "sliding_window_log", args: []string{"50", fmt.Sprint(W.Milliseconds())}, first: 50, most: rolling,
			least: func(s, e int64) float64 { return 50 * float64((e-s)/W.Microseconds()) }, why: "the last window's entries may not have aged out"},
		{script: "sliding_window_counter", args: []string{"50", fmt.Sprint(W.Milliseconds())}, first: 50, most: fixed,
			least: func(s, e int64) float64 { return 0.5 * 50 * float64(e-s) / float64(W.Microseconds()) },
			why:   "the estimate assumes the previous window's calls were spread evenly; under a burst at a window's start it overcounts, so it admits less"},
	}
}

// step is how far the virtual caller clock moves per call: 10 000 calls a
// second of it, fifty times any rate the loads allow, so they stay
// saturated; and slow enough that 25 000 calls a second of real time keep
// it within a few seconds of the server's.
const step = 100 // µs

// TestConcurrentLoad runs 64 goroutines against one key for 1.2 s, on the
// real server and on the cluster, and checks the admitted count against
// the algorithm, from above and from below.
//
// With the server's clock, how much a limiter admits over wall time depends
// on how the machine schedules Redis and the callers (a Redis descheduled
// for 100 ms loses a bucket's refill), so only the bound from above is
// checked, and that a fresh key admits its first burst. With callers'
// clocks the goroutines share a virtual clock that moves 100 µs per call:
// the calls come densely in it, in whatever order they reach Redis, so no
// scheduling can starve the limiter, and it must admit, from below, what a
// saturated limiter admits over the virtual span: the load test's check of
// liveness, and of the caller-clock paths under real concurrency.
func TestConcurrentLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short: concurrent load takes ~40 s")
	}
	for _, target := range []struct {
		name string
		open func(t *testing.T) redis.Scripter
	}{
		{"redis", func(t *testing.T) redis.Scripter { return standalone(t, 3) }},
		{"cluster", func(t *testing.T) redis.Scripter { return cluster(t) }},
	} {
		for _, ld := range loads() {
			for _, callerClock := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s%v/callerclock=%v", target.name, ld.script, ld.args, callerClock)
				t.Run(name, func(t *testing.T) {
					// No retries: a write script that go-redis sent again
					// after a read timeout would run twice and count once.
					c := noRetries(t, target.open(t))
					admitted, start, end, n := hammer(t, c, ld, callerClock, 64, 1200*time.Millisecond)
					most, least := ld.most(start, end), float64(ld.first)
					if callerClock {
						least = max(least, ld.least(start, end))
					}
					t.Logf("%d calls, admitted %d over %v: at most %.0f allowed, %.0f%% of it, at least %.0f required (%s)",
						n, admitted, time.Duration(end-start)*time.Microsecond, most, 100*float64(admitted)/most, least, ld.why)
					if float64(admitted) > most {
						t.Errorf("over-admitted: %d > %.1f", admitted, most)
					}
					if float64(admitted) < least {
						t.Errorf("under-admitted: %d < %.1f", admitted, least)
					}
				})
			}
		}
	}
}

// hammer calls one key from n goroutines for d and returns how many calls
// were admitted, the span (µs) the decisions can have been made in, and
// how many calls there were. With callerClock the calls carry the virtual
// clock: the server's TIME at the start plus step µs per call, taken in
// turn; the span is that clock's.
func hammer(t *testing.T, c redis.Scripter, ld load, callerClock bool, n int, d time.Duration) (admitted int64, start, end int64, calls int64) {
	t.Helper()
	src, err := luatest.Source(ld.script)
	if err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(src)
	ctx := context.Background()
	if err := script.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("load:{%s}:%d", ld.script, time.Now().UnixNano())
	var (
		wg       sync.WaitGroup
		count    atomic.Int64
		ticks    atomic.Int64
		failures atomic.Int64
		firstErr atomic.Value
	)
	// The virtual clock runs 10 s ahead of the server's: a first call on an
	// empty key is judged at the later of its clock and TIME, and a clock
	// that started at TIME would lag it by however long the first call took
	// to reach Redis (tens of ms on a loaded machine, whose refill the
	// bucket then never sees: 496 admitted where 507 were due).
	base := serverTime(t, c) + 10e6
	start = time.Now().UnixMicro()
	deadline := time.Now().Add(d)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				now := "0"
				if callerClock {
					now = fmt.Sprint(base + step*ticks.Add(1))
				}
				res, err := script.Run(ctx, c, []string{key}, ld.argv("1", now)...).Int64Slice()
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				count.Add(res[0])
				if !callerClock {
					ticks.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	end = time.Now().UnixMicro()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d calls failed, first: %v", f, firstErr.Load())
	}
	if callerClock {
		start, end = base+step, base+step*ticks.Load()
	}
	return count.Load(), start, end, ticks.Load()
}
