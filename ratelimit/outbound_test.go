package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/outbound"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// outboundMargin is the outbound recipe's (docs/recipes.md): its window is
// a second and this much more, for the time from Redis's decision to the
// call.
const outboundMargin = 50 * time.Millisecond

// The outbound recipe keeps a third party's rule: at most N calls in any
// second, counted at the instants the calls are made, from several
// processes (each a client and a limiter of its own) waiting on one key.
// A sliding log of N per second plus the margin admits at most N in any
// window of that length on Redis's clock, so N calls in any second of
// call instants follow for every call made within the margin of its
// decision. The test records, for each call, when the command that
// admitted it was sent (a client hook: the decision ran after that) and
// when the call was made, and checks every window of one second over the
// calls made within the margin (on a machine loaded enough to delay a
// reply past it, a few are left out, and counted). GCRA at
// PerSecond(50).WithBurst(5), the background job's recipe, fails it: up to
// 5 + 50 - 1 calls in one second (52 in a run here).
func TestOutboundNeverMoreThanNInAnySecond(t *testing.T) {
	srv := redisserver.New(t)
	const n, processes, callers = 50, 3, 4
	const run = 3500 * time.Millisecond
	recipe := ratelimit.Limit{Rate: n, Period: time.Second + outboundMargin, Burst: n}

	// asked is when the call's Wait began: a lower bound of its decision's
	// instant, for a call whose command the hook did not see (it went in
	// a batch across callers, under another caller's context).
	type call struct{ sent, made, asked time.Time }
	var (
		mu    sync.Mutex
		calls []call
		wg    sync.WaitGroup
	)
	stop := time.Now().Add(run)
	for p := 0; p < processes; p++ {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer rdb.Close()
		rdb.AddHook(outbound.SentHook{})
		api, err := ratelimit.New(rdb, "partner", recipe, ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))
		if err != nil {
			t.Fatal(err)
		}
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var sent time.Time
					ctx, cancel := context.WithDeadline(outbound.WithSent(context.Background(), &sent), stop)
					asked := time.Now()
					err := api.Wait(ctx, "api")
					cancel()
					made := time.Now()
					// The run is over, or the wait would pass its end (a
					// call sent just before it may run just after: EXPIRED).
					if errors.Is(err, context.DeadlineExceeded) || err != nil && !made.Before(stop) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					calls = append(calls, call{sent, made, asked})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()

	var made []time.Time
	late, unseen := 0, 0
	for _, c := range calls {
		if c.sent.IsZero() {
			// A lower bound only: such a call is judged more strictly
			// (more likely left out as late), never less.
			c.sent = c.asked
			unseen++
		}
		// Redis's TIME is in whole µs, so a decision may read up to 1 µs
		// before the instant its command was sent.
		if c.made.Sub(c.sent) >= outboundMargin-time.Microsecond {
			late++
			continue
		}
		made = append(made, c.made)
	}
	if unseen == len(calls) {
		t.Fatal("the hook saw no call's admitting command")
	}
	worst, at := outbound.WorstSecond(made)
	t.Logf("%d calls in %v (%.1f a second after the first %d), %d made later than %v after their decision (%d judged from their Wait's start); at most %d in one second (from %v)",
		len(calls), run, outbound.Sustained(made, n), n, late, outboundMargin, unseen, worst, at)
	if worst > n {
		t.Errorf("%d calls in one second, from %v: the recipe promises at most %d", worst, at, n)
	}
	if len(made) < len(calls)/2 {
		t.Errorf("%d of %d calls were made more than %v after their decision: too few to judge", late, len(calls), outboundMargin)
	}
	// Not a timing bound: a sanity check that waiters keep the log busy
	// (four windows hold 4n; a waiter that slept a whole window per call
	// made far fewer).
	if len(calls) < 2*n {
		t.Errorf("%d calls in %v: the waiters stall", len(calls), run)
	}
}
