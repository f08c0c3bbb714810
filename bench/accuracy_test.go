package bench

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/bindings"
)

var (
	accuracyDur    = flag.Duration("accuracy.dur", 2*time.Second, "how long TestAccuracy loads each limiter")
	accuracyRounds = flag.Int("accuracy.rounds", 1, "how many times TestAccuracy loads each limiter")
)

// accuracyQuota is the limit of the accuracy test: 1000 per second, 100 at
// once (the window limiters: 100 per 100 ms).
var accuracyQuota = quota{rate: 1000, burst: 100}

type loadResult struct {
	calls, admitted, errs int64
	most                  float64
	firstErr              error
}

// TestAccuracy runs 64 goroutines on one hot key of each limiter and
// compares what it admitted with what its algorithm allows over the same
// span: ratio = admitted / allowed, so above 1 is over-admission. Failed
// calls are counted as errors (throttled gives up on a compare-and-swap
// after 10 attempts and returns an error). redlimit's scripts run with the
// server's clock and with each caller's own clock; they must never
// over-admit or fail. The peers are measured, not judged.
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: loads each limiter for 2 s")
	}
	ctx := context.Background()
	c, _ := newClient(t)
	if err := bindings.LoadAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	ps, err := peers(c, accuracyQuota)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		l     limiter
		clock string
		ours  bool
	}
	var runs []run
	for _, l := range ours(c, accuracyQuota, false) {
		runs = append(runs, run{l, "server", true})
	}
	for _, l := range ours(c, accuracyQuota, true) {
		runs = append(runs, run{l, "caller", true})
	}
	clocks := map[string]string{
		"redis_rate":              "server",
		"ulule_limiter":           "server (TTL)",
		"throttled":               "server (TIME)",
		"redis_docs_token_bucket": "caller",
	}
	for _, l := range ps {
		runs = append(runs, run{l, clocks[l.name], false})
	}

	results := make([][]loadResult, len(runs))
	for round := 0; round < *accuracyRounds; round++ {
		for i, r := range runs {
			res := hammer(ctx, r.l, fmt.Sprintf("acc:%s:%s:%d", r.l.name, r.clock, round), *accuracyDur)
			results[i] = append(results[i], res)
			if r.ours {
				if res.errs > 0 {
					t.Errorf("%s (%s clock): %d of %d calls failed, first: %v", r.l.name, r.clock, res.errs, res.calls, res.firstErr)
				}
				if float64(res.admitted) > res.most {
					t.Errorf("%s (%s clock): over-admitted %d > %.1f", r.l.name, r.clock, res.admitted, res.most)
				}
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%d goroutines, one key, %v per run, %d run(s); %d/s, burst %d; median [min, max] over runs\n\n",
		goroutines, *accuracyDur, *accuracyRounds, accuracyQuota.rate, accuracyQuota.burst)
	fmt.Fprintf(&b, "| limiter | clock | calls | admitted | allowed | admitted / allowed | errors |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for i, r := range runs {
		rs := results[i]
		col := func(f func(loadResult) float64, format string) string {
			v := make([]float64, len(rs))
			for j, x := range rs {
				v[j] = f(x)
			}
			slices.Sort(v)
			med := median(v)
			if len(v) == 1 {
				return fmt.Sprintf(format, med)
			}
			return fmt.Sprintf(format+" ["+format+", "+format+"]", med, v[0], v[len(v)-1])
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.l.name, r.clock,
			col(func(x loadResult) float64 { return float64(x.calls) }, "%.0f"),
			col(func(x loadResult) float64 { return float64(x.admitted) }, "%.0f"),
			col(func(x loadResult) float64 { return x.most }, "%.0f"),
			col(func(x loadResult) float64 { return float64(x.admitted) / x.most }, "%.3f"),
			col(func(x loadResult) float64 { return 100 * float64(x.errs) / float64(x.calls) }, "%.1f%%"))
	}
	t.Log(b.String())
}

// hammer calls one key from 64 goroutines for d.
func hammer(ctx context.Context, l limiter, key string, d time.Duration) loadResult {
	var (
		wg                    sync.WaitGroup
		calls, admitted, errs atomic.Int64
		firstErr              atomic.Value
	)
	start := time.Now().UnixMicro()
	deadline := time.Now().Add(d)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ok, err := l.decide(ctx, key)
				calls.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	end := time.Now().UnixMicro()
	res := loadResult{calls: calls.Load(), admitted: admitted.Load(), errs: errs.Load(),
		most: most(l.algo, accuracyQuota, start, end)}
	if e, ok := firstErr.Load().(error); ok {
		res.firstErr = e
	}
	return res
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
