package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// TestFailurePolicyAcrossRestart loads limiters that fail open and closed
// while their redis-server is killed and started again: every decision
// returns within its timeout, the fallbacks decide while Redis is down, and
// within 1.5 s of Redis being back every decision comes from Redis and
// is right. No goroutine is left behind.
func TestFailurePolicyAcrossRestart(t *testing.T) {
	srv := redisserver.New(t)
	defer goleak.VerifyNone(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})

	const timeout = 150 * time.Millisecond
	// A decision must end within the timeout plus scheduling slack on a
	// loaded 2-core machine; go-redis alone would retry for seconds.
	const slack = 850 * time.Millisecond
	newL := func(name string, fb ratelimit.Fallback) *ratelimit.Limiter {
		l, err := ratelimit.New(rdb, name, ratelimit.PerSecond(1e6),
			ratelimit.WithFallback(fb), ratelimit.WithTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	open, closed := newL("open", ratelimit.FailOpen), newL("closed", ratelimit.FailClosed)

	type sample struct {
		at       time.Time
		took     time.Duration
		fallback bool
		d        ratelimit.Decision
		err      error
		l        *ratelimit.Limiter
	}
	var (
		mu      sync.Mutex
		samples []sample
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		l := open
		if g%2 == 1 {
			l = closed
		}
		wg.Add(1)
		go func(g int, l *ratelimit.Limiter) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				d, err := l.Allow(context.Background(), fmt.Sprintf("user%d", g))
				s := sample{at: start, took: time.Since(start), fallback: d.Cause != nil, d: d, err: err, l: l}
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}(g, l)
	}

	time.Sleep(400 * time.Millisecond)
	downAt := time.Now()
	srv.Stop()
	time.Sleep(700 * time.Millisecond)
	upBegin := time.Now()
	srv.Restart()
	upAt := time.Now()
	// go-redis's pool, once PoolSize dials have failed, answers every dial
	// with the last error until its own redial succeeds, which it tries
	// once a second: decisions come from Redis again up to a second after
	// it is back, plus the breaker's probe interval (internal/guard).
	const recovery = 1500 * time.Millisecond
	time.Sleep(recovery + time.Second)
	close(stop)
	wg.Wait()

	var before, down, after, lateFallbacks, lateTimeouts int
	for _, s := range samples {
		if s.took > timeout+slack {
			t.Errorf("a decision took %v (timeout %v)", s.took, timeout)
		}
		if s.err != nil {
			t.Errorf("%s: error %v: a fallback must decide", s.d.Name, s.err)
			continue
		}
		if s.fallback {
			// While Redis is down, the fallback decides, and as it says.
			if want := s.l == open; s.d.Allowed != want || s.d.Cause == nil {
				t.Errorf("%s: fallback decision %v", s.d.Name, s.d)
			}
		} else if !s.d.Allowed || s.d.Remaining < 1e6-1000 {
			t.Errorf("%s: decision from Redis %v", s.d.Name, s.d)
		}
		// A decision that ran into its 150 ms timeout on a loaded machine
		// is load, not a limiter that misjudged Redis: counted apart.
		timedOut := s.fallback && s.took >= timeout && strings.Contains(fmt.Sprint(s.d.Cause), "no answer within")
		switch end := s.at.Add(s.took); {
		case end.Before(downAt):
			before++
			if s.fallback && !timedOut {
				t.Errorf("a fallback before Redis went down: %v", s.d)
			}
		case s.at.After(downAt) && end.Before(upBegin):
			down++
			if !s.fallback {
				t.Errorf("a decision from Redis while it was down: %v", s.d)
			}
		case s.at.After(upAt.Add(recovery)):
			after++
			switch {
			case timedOut:
				lateTimeouts++
			case s.fallback:
				lateFallbacks++
				t.Logf("late fallback at +%v took %v: %v", s.at.Sub(upAt), s.took, s.d.Cause)
			}
		}
	}
	if lateFallbacks > 0 {
		t.Errorf("%d fallbacks more than %v after Redis was back", lateFallbacks, recovery)
	}
	if before == 0 || down == 0 || after == 0 {
		t.Errorf("decisions before the outage %d, during %d, after the recovery %d: each phase needs some", before, down, after)
	}
	t.Logf("%d decisions: %d before the outage, %d during, %d after the recovery (%d of them timed out)", len(samples), before, down, after, lateTimeouts)

	// And the limit itself holds again: a fresh key admits its burst.
	exact, err := ratelimit.New(rdb, "exact", ratelimit.Per(5, time.Hour), ratelimit.WithFallback(ratelimit.FailOpen))
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for i := 0; i < 10; i++ {
		d, err := exact.Allow(context.Background(), "after-restart")
		if err != nil || d.Cause != nil {
			t.Fatalf("%v, %v", d, err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("after the restart %d of 10 allowed, want 5", allowed)
	}
	rdb.Close()
	srv.Stop()
}

// On a real server a script's WRONGTYPE is ErrWrongType, and a fallback
//
//	never turns it into an allow: it is foreign data, not an outage.
func TestRealWrongType(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	for _, alg := range ratelimit.Algorithms() {
		l := newNamed(t, rdb, alg.String(), alg, ratelimit.WithFallback(ratelimit.FailOpen))
		rdb.LPush(ctx, l.RedisKey("k"), "not ours")
		d, err := l.Allow(ctx, "k")
		if !errors.Is(err, bindings.ErrWrongType) || d.Allowed || d.Cause != nil {
			t.Errorf("%v: %v, %v, want ErrWrongType", alg, d, err)
		}
		if n, _ := rdb.LLen(ctx, l.RedisKey("k")).Result(); n != 1 {
			t.Errorf("%v: the list has %d elements", alg, n)
		}
	}
}

// TestFailLocalAcrossKill measures the insurance limiter on a real
// redis-server that is killed and started again under load on one hot key:
// while it is down, the process keeps limiting at its share (never more
// than the share's burst plus its rate over the outage, and at least the
// share's burst), with no error; within a second of Redis being back,
// Redis decides again.
func TestFailLocalAcrossKill(t *testing.T) {
	srv := redisserver.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	limit := ratelimit.PerSecond(100) // burst 100
	const share = 0.25                // this process's share: 25 at once, 25 a second
	l, err := ratelimit.New(rdb, "insured", limit, ratelimit.WithFallback(ratelimit.FailLocal(share)), ratelimit.WithTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		start, end time.Time
		d          ratelimit.Decision
		err        error
	}
	var (
		mu      sync.Mutex
		samples []sample
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				d, err := l.Allow(context.Background(), "hot")
				mu.Lock()
				samples = append(samples, sample{start, time.Now(), d, err})
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	downAt := time.Now()
	srv.Stop()
	time.Sleep(1500 * time.Millisecond)
	upBegin := time.Now()
	srv.Restart()
	upAt := time.Now()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	var local, localAllowed, fromRedisAfter, lateLocal, lateTimeouts int
	var first, last time.Time
	for _, s := range samples {
		if s.err != nil {
			t.Errorf("an error: %v (the fallback must decide)", s.err)
			continue
		}
		if s.d.Cause != nil {
			if s.d.Fallback != ratelimit.FailLocal(share) {
				t.Errorf("a fallback that is not local: %v", s.d)
			}
			local++
			if s.d.Allowed {
				localAllowed++
			}
			if first.IsZero() || s.start.Before(first) {
				first = s.start
			}
			if s.end.After(last) {
				last = s.end
			}
			if s.end.Before(downAt) {
				t.Errorf("a local decision before the kill: %v", s.d)
			}
		}
		if s.start.After(upAt.Add(time.Second)) {
			switch {
			case s.d.Cause != nil && s.end.Sub(s.start) >= 150*time.Millisecond:
				// The call's own 150 ms timeout ran out (a loaded
				// machine): Redis was asked, and was late once.
				lateTimeouts++
			case s.d.Cause != nil:
				// Decided at once without Redis: the breaker still
				// open a second after the restart.
				lateLocal++
			default:
				fromRedisAfter++
			}
		}
		if s.start.After(downAt) && s.end.Before(upBegin) && s.d.Cause == nil {
			t.Errorf("a decision from Redis while it was down: %v", s.d)
		}
	}
	span := last.Sub(first)
	bound := 25 + int(25*span.Seconds()) + 1
	t.Logf("while down (%v of local decisions): %d decisions, %d allowed (bound %d: 25 at once + 25/s); after: %d from Redis, %d local, %d past the timeout",
		span.Round(time.Millisecond), local, localAllowed, bound, fromRedisAfter, lateLocal, lateTimeouts)
	if localAllowed > bound {
		t.Errorf("%d allowed in memory over %v, more than the share's %d", localAllowed, span, bound)
	}
	if localAllowed < min(25, local) {
		t.Errorf("%d of %d local decisions allowed: the share's burst of 25 must pass", localAllowed, local)
	}
	if local == 0 || fromRedisAfter == 0 || lateLocal > 0 || lateTimeouts > fromRedisAfter/100 {
		t.Errorf("%d local decisions, %d from Redis a second after the restart, %d local then", local, fromRedisAfter, lateLocal)
	}
	srv.Stop()
}
