package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/outbound"
	"github.com/redlimit/redlimit/ratelimit"
)

var (
	outboundDur    = flag.Duration("outbound.dur", 5*time.Second, "how long TestOutbound runs each recipe")
	outboundRounds = flag.Int("outbound.rounds", 1, "how many times TestOutbound runs each recipe")
)

// outboundN is the third party's rule in TestOutbound: at most 100 calls in
// any second.
const outboundN = 100

// outboundMargin is the recipe's margin (docs/recipes.md): its window is a
// second and this much more, for the time from a decision to its call.
const outboundMargin = 50 * time.Millisecond

// outboundRecipes are the ways to keep outboundN a second that TestOutbound
// compares: the recipe, the same log with a narrower margin and without
// one, and GCRA as the background job's recipe sets it (a burst of 5), by
// default (a burst of the rate) and paced (a burst of 1).
var outboundRecipes = []struct {
	name  string
	alg   ratelimit.Algorithm
	limit ratelimit.Limit
}{
	{"log_1s_50ms", ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: outboundN, Period: time.Second + outboundMargin, Burst: outboundN}},
	{"log_1s_20ms", ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: outboundN, Period: time.Second + 20*time.Millisecond, Burst: outboundN}},
	{"log_1s", ratelimit.SlidingWindowLog, ratelimit.PerSecond(outboundN)},
	{"gcra_burst5", ratelimit.GCRA, ratelimit.PerSecond(outboundN).WithBurst(5)},
	{"gcra_default", ratelimit.GCRA, ratelimit.PerSecond(outboundN)},
	{"gcra_burst1", ratelimit.GCRA, ratelimit.PerSecond(outboundN).WithBurst(1)},
}

// outboundProcesses stand for processes of a fleet: each has a client and
// a limiter of its own, and its share of the 64 goroutines, all calling
// Wait on one key.
const outboundProcesses = 4

// TestOutbound is the outbound limit, "call a third-party API at most 100 a
// second across the fleet": 64 goroutines in 4 limiters (each with its own
// client) Wait on one key for outbound.dur, and each call's instant is
// recorded as it is made, with the instant the command that admitted it
// was sent. Each recipe's round prints one line for cmd/benchtable:
//
//	OUTBOUND row=R round=I n=N calls=C rate=X worst=W late=L decisions=D
//
// n is the third party's rule (calls in any second); rate is the calls a second the recipe sustains (n calls over the mean
// time from a call to the n-th after it, past the first n: a log admits in
// bursts, so a count over a few seconds would be off by up to n); worst
// the most calls in any second of call instants, which the third party
// counts; late the calls made 50 ms or more after their command was sent
// (the recipe's margin: those may fall in a second the log did not count
// them in); decisions the Redis decisions per call.
func TestOutbound(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: runs each recipe for 5 s")
	}
	for round := 0; round < *outboundRounds; round++ {
		for _, rc := range outboundRecipes {
			expect("outbound", "row", rc.name)
			res, err := runOutbound(t, rc.name, rc.alg, rc.limit, *outboundDur)
			if err != nil {
				t.Fatalf("%s: %v", rc.name, err)
			}
			fmt.Printf("OUTBOUND row=%s round=%d n=%d calls=%d rate=%.1f worst=%d late=%d decisions=%.2f\n",
				rc.name, round, outboundN, res.calls, res.rate, res.worst, res.late, res.decisions)
			if rc.name == "log_1s_50ms" && res.worst > outboundN && res.late == 0 {
				t.Errorf("%s: %d calls in one second, none of them late: the recipe promises at most %d", rc.name, res.worst, outboundN)
			}
		}
	}
}

type outboundResult struct {
	calls, worst, late int
	rate, decisions    float64
}

func runOutbound(t *testing.T, name string, alg ratelimit.Algorithm, limit ratelimit.Limit, d time.Duration) (outboundResult, error) {
	ctx := context.Background()
	key := fmt.Sprintf("outbound:%s:%d", name, time.Now().UnixNano())
	type call struct{ sent, made time.Time }
	var (
		mu        sync.Mutex
		calls     []call
		decisions atomic.Int64
		failed    firstError
		wg        sync.WaitGroup
	)
	stop := time.Now().Add(d)
	for p := 0; p < outboundProcesses; p++ {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: goroutines / outboundProcesses})
		defer c.Close()
		c.AddHook(outbound.SentHook{})
		l, err := ratelimit.New(c, "outbound", limit, ratelimit.WithAlgorithm(alg),
			ratelimit.WithHook(func(context.Context, ratelimit.Event) { decisions.Add(1) }))
		if err != nil {
			return outboundResult{}, err
		}
		for g := 0; g < goroutines/outboundProcesses; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var sent time.Time
					cctx, cancel := context.WithDeadline(outbound.WithSent(ctx, &sent), stop)
					asked := time.Now()
					err := l.Wait(cctx, key)
					if sent.IsZero() {
						// Its command went in a batch across callers, under
						// another's context: the Wait's start bounds it.
						sent = asked
					}
					made := time.Now()
					cancel()
					// The run is over, or the wait would pass its end (a
					// call sent just before it may run just after: EXPIRED,
					// before the context's own timer marks it done).
					if errors.Is(err, context.DeadlineExceeded) || err != nil && !made.Before(stop) {
						return
					}
					if err != nil {
						failed.set(err)
						return
					}
					mu.Lock()
					calls = append(calls, call{sent, made})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := failed.get(); err != nil {
		return outboundResult{}, err
	}
	slices.SortFunc(calls, func(a, b call) int { return a.made.Compare(b.made) })
	res := outboundResult{calls: len(calls), decisions: float64(decisions.Load()) / float64(max(len(calls), 1))}
	made := make([]time.Time, len(calls))
	for i, c := range calls {
		made[i] = c.made
		// Redis's TIME is in whole µs: a decision may read up to 1 µs
		// before the instant its command was sent.
		if c.made.Sub(c.sent) >= outboundMargin-time.Microsecond {
			res.late++
		}
	}
	res.worst, _ = outbound.WorstSecond(made)
	res.rate = outbound.Sustained(made, outboundN)
	return res, nil
}
