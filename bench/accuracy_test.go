package bench

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

var (
	accuracyDur    = flag.Duration("accuracy.dur", 2*time.Second, "how long TestAccuracy loads each limiter")
	accuracyRounds = flag.Int("accuracy.rounds", 1, "how many times TestAccuracy loads each limiter")
)

// accuracyQuota is the limit of the accuracy test: 1000 per second, 100 at
// once (the window limiters: 100 per 100 ms).
var accuracyQuota = newQuota(1000, 100, time.Second)

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
// server's clock and with each caller's own clock, over go-redis's
// AutoPipeliner, and with the deny cache; they must never over-admit or
// fail. The peers are measured, not judged.
//
// Each round of each limiter prints one line that cmd/benchtable reads:
//
//	ACCURACY limiter=L clock=C round=R calls=N admitted=A allowed=M errors=E
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: loads each limiter for 2 s")
	}
	ctx := context.Background()
	c, _ := newClient(t)
	if err := bindings.LoadAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
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
	// Over the AutoPipeliner with the server's clock only: the scripts and
	// the clocks are those of the plain rows, only the transport differs.
	for _, v := range []struct {
		variant
		c      ratelimit.Client
		caller bool
	}{{plain, c, true}, {variant{suffix: "_ap"}, ap, false}, {withCache, c, true}} {
		for _, l := range ours(v.c, accuracyQuota, false, v.variant) {
			runs = append(runs, run{l, "server", true})
		}
		if !v.caller {
			continue
		}
		for _, l := range ours(v.c, accuracyQuota, true, v.variant) {
			runs = append(runs, run{l, "caller", true})
		}
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

	for round := 0; round < *accuracyRounds; round++ {
		for _, r := range runs {
			res := hammer(ctx, r.l, fmt.Sprintf("acc:%s:%s:%d", r.l.name, r.clock, round), *accuracyDur)
			fmt.Printf("ACCURACY limiter=%s clock=%s round=%d calls=%d admitted=%d allowed=%.0f errors=%d\n",
				r.l.name, strings.ReplaceAll(r.clock, " ", "_"), round, res.calls, res.admitted, res.most, res.errs)
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
}

// hammer calls one key from 64 goroutines for d.
func hammer(ctx context.Context, l limiter, key string, d time.Duration) loadResult {
	var (
		wg                    sync.WaitGroup
		calls, admitted, errs atomic.Int64
		firstErr              firstError
	)
	start := time.Now().UnixMicro()
	deadline := time.Now().Add(d)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ok, _, err := l.decide(ctx, key)
				calls.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.set(err)
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
	return loadResult{calls: calls.Load(), admitted: admitted.Load(), errs: errs.Load(),
		most: most(l.algo, accuracyQuota, start, end), firstErr: firstErr.get()}
}
