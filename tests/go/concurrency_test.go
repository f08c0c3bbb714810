package tiers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
)

// load is one limiter configuration under concurrent load.
type load struct {
	script string
	args   []any // ARGV before cost and now
	// most is what the algorithm may admit over [start, end] (µs since the
	// epoch); least is what a saturated limiter must admit at the least,
	// given every call's send and answer time.
	most  func(start, end int64) float64
	least func(start, end int64, calls []span) float64
	why   string // why least is below most
}

// span is one call: when it was sent and when its answer came (µs). The
// server ran it in between, by its clock and by the caller's.
type span struct{ sent, answered int64 }

// upTo turns a bound on [start, end] into a least of 90% of it.
func upTo(f func(start, end int64) float64) func(int64, int64, []span) float64 {
	return func(s, e int64, _ []span) float64 { return 0.9 * f(s, e) }
}

// filled is the least a window limiter must admit: in each aligned window
// that lies wholly inside the run, at least the limit, or every call that
// was both sent and answered inside that window if fewer came (a call is
// judged by the clock it carries or the server's, both inside its span).
// Windows the run only touches count for nothing: on a loaded machine the
// goroutines may not reach them in time.
func filled(limit int64, window time.Duration) func(int64, int64, []span) float64 {
	w := window.Microseconds()
	return func(start, end int64, calls []span) float64 {
		inside := map[int64]int64{}
		for _, c := range calls {
			if k := c.sent / w; c.answered/w == k && k*w >= start && (k+1)*w <= end {
				inside[k]++
			}
		}
		var least int64
		for k := (start + w - 1) / w; (k+1)*w <= end; k++ {
			least += min(limit, inside[k])
		}
		return float64(least)
	}
}

func perPeriod(burst, rate float64, period time.Duration) func(start, end int64) float64 {
	return func(start, end int64) float64 {
		return burst + rate*float64(end-start)/float64(period.Microseconds())
	}
}

// steps bounds a bucket that gains rate at once per whole period: a span
// sees at most one step more than it holds whole periods.
func steps(burst, rate float64, period time.Duration, extra int64) func(start, end int64) float64 {
	return func(start, end int64) float64 {
		return burst + rate*float64((end-start)/period.Microseconds()+extra)
	}
}

// windows counts the epoch-aligned windows that [start, end] touches.
func windows(window time.Duration) func(start, end int64) float64 {
	w := window.Microseconds()
	return func(start, end int64) float64 { return float64(end/w - start/w + 1) }
}

func loads() []load {
	// The run lasts 1.2 s: not a whole number of windows, so the last
	// window of a saturated log has well started.
	const W = 350 * time.Millisecond
	fixed := func(s, e int64) float64 { return 50 * windows(W)(s, e) }
	// A rolling log admits limit, then limit again each time a window of
	// entries ages out: at most limit per started window.
	rolling := func(s, e int64) float64 { return 50 * float64((e-s)/W.Microseconds()+1) }
	return []load{
		{script: "token_bucket", args: []any{"20", "200", "1000", "smooth"}, most: perPeriod(20, 200, time.Second),
			least: upTo(perPeriod(20, 200, time.Second)), why: "tokens that accrue after the last call"},
		{script: "token_bucket", args: []any{"50", "50", "250", "interval"}, most: steps(50, 50, 250*time.Millisecond, 1),
			least: upTo(steps(50, 50, 250*time.Millisecond, 0)), why: "the steps run on a grid from the first call; the last may not have come"},
		{script: "gcra", args: []any{"20", "200", "1000"}, most: perPeriod(20, 200, time.Second),
			least: upTo(perPeriod(20, 200, time.Second)), why: "capacity that accrues after the last call"},
		{script: "leaky_bucket", args: []any{"20", "200", "1000"}, most: perPeriod(20, 200, time.Second),
			least: upTo(perPeriod(20, 200, time.Second)), why: "room that drains after the last call"},
		{script: "fixed_window", args: []any{"50", fmt.Sprint(W.Milliseconds())}, most: fixed,
			least: filled(50, W), why: "windows the run only touches at its ends may see too few calls"},
		{script: "sliding_window_log", args: []any{"50", fmt.Sprint(W.Milliseconds())}, most: rolling,
			least: func(s, e int64, calls []span) float64 { return 0.9 * filled(50, W)(s, e, calls) },
			why:   "the last window's entries may not have aged out"},
		{script: "sliding_window_counter", args: []any{"50", fmt.Sprint(W.Milliseconds())}, most: fixed,
			least: func(s, e int64, _ []span) float64 { return 0.5 * 50 * float64(e-s) / float64(W.Microseconds()) },
			why:   "the estimate assumes the previous window's calls were spread evenly; under a burst at a window's start it overcounts, so it admits less"},
	}
}

// TestConcurrentLoad runs 64 goroutines against one key for a while, on the
// real server and on the cluster, with the server's clock and with each
// caller's own clock, and checks the admitted count against the algorithm.
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
					c := target.open(t)
					admitted, start, end, calls := hammer(t, c, ld, callerClock, 64, 1200*time.Millisecond)
					most, least := ld.most(start, end), ld.least(start, end, calls)
					t.Logf("admitted %d over %v: at most %.0f allowed, %.0f%% of it, at least %.0f required (%s)",
						admitted, time.Duration(end-start)*time.Microsecond, most, 100*float64(admitted)/most, least, ld.why)
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
// every call's span.
func hammer(t *testing.T, c redis.Scripter, ld load, callerClock bool, n int, d time.Duration) (admitted int64, start, end int64, calls []span) {
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
		failures atomic.Int64
		firstErr atomic.Value
		mu       sync.Mutex
	)
	start = time.Now().UnixMicro()
	deadline := time.Now().Add(d)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []span
			for time.Now().Before(deadline) {
				sent := time.Now().UnixMicro()
				now := "0"
				if callerClock {
					now = fmt.Sprint(sent)
				}
				args := append(append([]any{}, ld.args...), "1", now)
				res, err := script.Run(ctx, c, []string{key}, args...).Int64Slice()
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				mine = append(mine, span{sent, time.Now().UnixMicro()})
				count.Add(res[0])
			}
			mu.Lock()
			calls = append(calls, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	end = time.Now().UnixMicro()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d calls failed, first: %v", f, firstErr.Load())
	}
	return count.Load(), start, end, calls
}
