package autopipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/scriptingtest"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

// faces returns the AutoPipeliner's blocking and async faces over rdb,
// closed when the test ends.
func faces(t *testing.T, rdb *redis.Client) map[string]*redis.AutoPipeliner {
	t.Helper()
	blocking, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	async, err := rdb.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blocking.Close(); async.Close() })
	return map[string]*redis.AutoPipeliner{"blocking": blocking, "async": async}
}

// commandCalls reads how many times the server ran a command.
func commandCalls(t *testing.T, rdb *redis.Client, name string) int64 {
	t.Helper()
	stats, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls="); ok {
			var n int64
			fmt.Sscan(strings.SplitN(rest, ",", 2)[0], &n)
			return n
		}
	}
	return 0
}

// SCRIPT FLUSH while 64 goroutines decide over the AutoPipeliner: the calls
// answered NOSCRIPT (which did not run) are sent again as EVAL, none fails,
// and a hot key admits exactly its burst: nothing ran twice.
func TestNoScriptUnderLoad(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for name, ap := range faces(t, rdb) {
		evalsBefore := commandCalls(t, rdb, "eval")
		l, err := ratelimit.New(ap, "flush-"+name, ratelimit.Per(300, 24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		flushed := make(chan int)
		go func() {
			n := 0
			defer func() { flushed <- n }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					if err := rdb.ScriptFlush(ctx).Err(); err != nil {
						t.Error(err)
						return
					}
					n++
				}
			}
		}()
		var allowed, failed atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		for g := 0; g < 64; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					d, err := l.Allow(ctx, "hot")
					switch {
					case err != nil:
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					case d.Allowed:
						allowed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		flushes := <-flushed
		if allowed.Load() != 300 || failed.Load() != 0 {
			t.Errorf("%s: %d of 1280 allowed, %d failed (first: %v); want 300, 0", name, allowed.Load(), failed.Load(), firstErr.Load())
		}
		// The test proves something only if calls did meet NOSCRIPT.
		if evals := commandCalls(t, rdb, "eval") - evalsBefore; evals == 0 || flushes == 0 {
			t.Errorf("%s: %d SCRIPT FLUSHes, %d EVAL fallbacks: the fallback was not exercised", name, flushes, evals)
		} else {
			t.Logf("%s: %d SCRIPT FLUSHes, %d calls fell back to EVAL", name, flushes, evals)
		}
	}
}

// Error replies reach the caller whose call caused them, however calls
// share a pipeline: BADARG from the script (a rate above one per µs, which
// Go does not check), WRONGTYPE from foreign data, and good calls beside
// them, all at once. A fallback never hides WRONGTYPE.
func TestScriptErrorsOverAutoPipeline(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for name, ap := range faces(t, rdb) {
		// A burst of 1e6 that gains 1 a minute: Remaining counts the calls
		// exactly however long a loaded machine takes (PerDay(1e6) gains
		// one every 86 ms).
		l, err := ratelimit.New(ap, "errs-"+name, ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 1e6}, ratelimit.WithFallback(ratelimit.FailOpen))
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.LPush(ctx, testredis.Key("rl:errs-"+name+":", "foreign"), "not ours").Err(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 48; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					switch g % 3 {
					case 0:
						_, err := bindings.GCRA(ctx, ap, []string{"badarg"}, bindings.GCRAParams{Burst: 1, Rate: 1e9, Period: time.Millisecond,
							Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 1}}})
						if !errors.Is(err, bindings.ErrBadArg) {
							t.Errorf("%s: a rate above one per µs: %v, want ErrBadArg", name, err)
						}
					case 1:
						d, err := l.Allow(ctx, "foreign")
						if !errors.Is(err, bindings.ErrWrongType) || d.Allowed || d.Cause != nil {
							t.Errorf("%s: foreign data: %v, %v; want ErrWrongType", name, d, err)
						}
					default:
						d, err := l.Allow(ctx, fmt.Sprintf("good%d", g))
						if err != nil || !d.Allowed || d.Remaining != 1e6-1-int64(i) {
							t.Errorf("%s: a good call: %v, %v", name, d, err)
						}
					}
				}
			}(g)
		}
		wg.Wait()
		if n, _ := rdb.LLen(ctx, testredis.Key("rl:errs-"+name+":", "foreign")).Result(); n != 1 {
			t.Errorf("%s: the foreign list has %d elements", name, n)
		}
		if n, _ := rdb.Exists(ctx, "badarg").Result(); n != 0 {
			t.Errorf("%s: a BADARG call wrote its key", name)
		}
	}
}

// awaitStall returns once the server at addr stops answering (DEBUG SLEEP
// has begun): a fixed sleep would guess how long the admin client takes to
// dial and send it on a loaded machine.
func awaitStall(t *testing.T, addr string) {
	t.Helper()
	probe := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 20 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
	defer probe.Close()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if err := probe.Ping(context.Background()).Err(); err != nil {
			return // the ping timed out: Redis is asleep
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("DEBUG SLEEP did not begin within 2 s")
}

// Redis stops answering for a while (DEBUG SLEEP): decisions over the
// AutoPipeliner still end within their timeout, the fallbacks
// decide, and once Redis answers again decisions come from it. Then Redis
// crashes and restarts empty: the policies decide while it is down, and
// decisions come from it again after. No goroutine is left behind once the
// AutoPipeliners and the client close.
func TestTimeoutAndFailurePolicyOverAutoPipeline(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := redisserver.New(t, "--enable-debug-command", "yes")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	ctx := context.Background()
	const timeout = 100 * time.Millisecond
	// A decision must end within the timeout plus scheduling slack on a
	// loaded 2-core machine; the stall lasts far longer.
	const slack = 900 * time.Millisecond
	const stall = 3 * time.Second
	aps := faces(t, rdb)
	for name, ap := range aps {
		policies := map[ratelimit.Fallback]*ratelimit.Limiter{}
		for _, fb := range []ratelimit.Fallback{{}, ratelimit.FailOpen, ratelimit.FailClosed} {
			l, err := ratelimit.New(ap, fmt.Sprintf("%s-%v", name, fb), ratelimit.Per(1e6, 24*time.Hour),
				ratelimit.WithTimeout(timeout), ratelimit.WithFallback(fb))
			if err != nil {
				t.Fatal(err)
			}
			// 1000 counted before: a key that Redis lost counts far less.
			// Counted by a twin without the timeout, which a loaded machine
			// can pass on a first call (it loads the script).
			warm, err := ratelimit.New(ap, fmt.Sprintf("%s-%v", name, fb), ratelimit.Per(1e6, 24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := warm.AllowN(ctx, "k", 1000); err != nil {
				t.Fatalf("%s %v before the stall: %v", name, fb, err)
			}
			policies[fb] = l
		}
		slept := make(chan error, 1)
		go func() { slept <- admin.Do(ctx, "DEBUG", "SLEEP", stall.Seconds()).Err() }()
		awaitStall(t, srv.Addr)
		for fb, l := range policies {
			start := time.Now()
			d, err := l.Allow(ctx, "k")
			took := time.Since(start)
			if took < timeout || took > timeout+slack {
				t.Errorf("%s %v: the decision took %v with a timeout of %v", name, fb, took, timeout)
			}
			switch fb {
			case ratelimit.Fallback{}:
				if !errors.Is(err, ratelimit.ErrUnavailable) {
					t.Errorf("%s: no fallback: %v, %v; want ErrUnavailable", name, d, err)
				}
			default:
				if err != nil || d.Fallback != fb || d.Allowed != (fb == ratelimit.FailOpen) || !errors.Is(d.Cause, ratelimit.ErrUnavailable) {
					t.Errorf("%s %v: %v, %v", name, fb, d, err)
				}
			}
		}
		if err := <-slept; err != nil {
			t.Fatal(err)
		}
		// Redis answers again: within a few seconds every policy's decision
		// comes from Redis (the AutoPipeliner first finishes the calls the
		// timeouts abandoned).
		for fb, l := range policies {
			d, err := fromRedis(ctx, l, "k")
			if err != nil || d.Cause != nil || !d.Allowed {
				t.Errorf("%s %v after the stall: %v, %v", name, fb, d, err)
			}
		}

		// Redis is gone (a crash): the policies decide on the error, and
		// after a restart (scripts and data lost) decisions come from Redis.
		srv.Stop()
		for fb, l := range policies {
			d, err := l.Allow(ctx, "k")
			if fb == (ratelimit.Fallback{}) {
				if err == nil {
					t.Errorf("%s: no fallback, Redis down: %v", name, d)
				}
			} else if err != nil || d.Fallback != fb || d.Allowed != (fb == ratelimit.FailOpen) || d.Cause == nil {
				t.Errorf("%s %v, Redis down: %v, %v", name, fb, d, err)
			}
		}
		srv.Restart()
		for fb, l := range policies {
			d, err := fromRedis(ctx, l, "k")
			// (Not exactly 1e6-1 left: a call the timeout abandoned while
			// the AutoPipeliner reconnected may still have run.)
			if err != nil || d.Cause != nil || !d.Allowed || d.Remaining < 1e6-10 {
				t.Errorf("%s %v after a restart: %v, %v; want a fresh key from Redis", name, fb, d, err)
			}
		}
	}
	for _, ap := range aps {
		ap.Close()
	}
	rdb.Close()
	admin.Close()
	srv.Stop()
}

// fromRedis decides until Redis decides (no fallback, no error), for at
// most 5 s, and returns the last decision.
func fromRedis(ctx context.Context, l *ratelimit.Limiter, key string) (d ratelimit.Decision, err error) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if d, err = l.Allow(ctx, key); err == nil && d.Cause == nil {
			break
		}
	}
	return d, err
}

// What a killed server costs decisions over the AutoPipeliner, which the
// limiter cannot guard (go-redis hides the client under it), beside the
// same client passed itself (guarded), for docs/operations.md: 8 paced
// callers under FailOpen, the server killed, started again 3 s later.
// Unguarded, each decision while the server is down waits out go-redis's
// dials and retries (a timeout bounds it); the guard answers at once. All
// come back once the server answers.
func TestKillOverAutoPipeline(t *testing.T) {
	srv := redisserver.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	clients := []struct {
		name    string
		c       ratelimit.Client
		timeout time.Duration
	}{{"client (guarded)", rdb, 0}, {"AutoPipeliner", ap, 0}, {"AutoPipeliner, WithTimeout(100ms)", ap, 100 * time.Millisecond}}
	for _, cl := range clients {
		l, err := ratelimit.New(cl.c, "kill", ratelimit.PerSecond(1e5), ratelimit.WithFallback(ratelimit.FailOpen), ratelimit.WithTimeout(cl.timeout))
		if err != nil {
			t.Fatal(err)
		}
		callers := scriptingtest.StartPaced(t, cl.name, l)
		time.Sleep(300 * time.Millisecond)
		killAt := time.Now()
		srv.Stop()
		time.Sleep(3 * time.Second)
		srv.Restart() // returns once it answers PING
		up := time.Now()
		time.Sleep(2 * time.Second)
		var down []time.Duration // calls begun while the server was down
		var back time.Duration
		fellBack := 0
		for _, e := range callers.Stop() {
			switch {
			case e.Start.Before(killAt):
			case e.Start.Before(up):
				down = append(down, e.Took)
				if e.Fallback {
					fellBack++
				}
			case e.Fallback:
				back = max(back, e.Start.Add(e.Took).Sub(up))
			}
		}
		if len(down) == 0 {
			t.Fatalf("%s: no decision began while the server was down", cl.name)
		}
		if back > 1900*time.Millisecond {
			t.Errorf("%s: decisions still fell back %v after the restart", cl.name, back)
		}
		sort.Slice(down, func(i, j int) bool { return down[i] < down[j] })
		t.Logf("%s: %d decisions began in the 3 s the server was down, %d by the policy, taking p50 %v p99 %v max %v; the policy's last decision %v after the restart",
			cl.name, len(down), fellBack, down[len(down)/2], down[len(down)*99/100], down[len(down)-1], back.Round(time.Millisecond))
	}
}
