package ratelimit_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

// downClient talks to a port where no Redis listens, and gives up at once.
func downClient(t *testing.T) *redis.Client { return testredis.Down(t) }

// hungServer accepts connections and never answers, like a Redis that is
// stuck or a network that drops packets. stop (also run at cleanup)
// closes it and its connections.
func hungServer(t *testing.T) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	stop = func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func TestFallbackWhenRedisIsDown(t *testing.T) {
	rdb := downClient(t)
	var events []ratelimit.Event
	hook := ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) { events = append(events, e) })
	open := newNamed(t, rdb, "open", ratelimit.GCRA, ratelimit.WithFallback(ratelimit.FailOpen), hook)
	closed := newNamed(t, rdb, "closed", ratelimit.FixedWindow, ratelimit.WithFallback(ratelimit.FailClosed), hook)
	none := newNamed(t, rdb, "none", ratelimit.TokenBucket, hook)

	d, err := open.Allow(ctx, "k")
	if err != nil || !d.Allowed || d.Fallback != ratelimit.FailOpen || !errors.Is(d.Cause, ratelimit.ErrUnavailable) || d.Limit != ratelimit.PerSecond(10) || d.Name != "open" {
		t.Errorf("fail open: %+v, %v", d, err)
	}
	d, err = closed.Peek(ctx, "k")
	if err != nil || d.Allowed || d.Fallback != ratelimit.FailClosed || d.Cause == nil {
		t.Errorf("fail closed: %+v, %v", d, err)
	}
	d, err = none.AllowN(ctx, "k", 2)
	if !errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed || d.Cause != nil {
		t.Errorf("no fallback: %+v, %v", d, err)
	}
	all, err := mustAll(t, open, closed).AllowN(ctx, "k", 1)
	if ds := all.Parts; err != nil || all.Allowed || !ds[0].Allowed || ds[1].Allowed || ds[0].Fallback != ratelimit.FailOpen || ds[1].Fallback != ratelimit.FailClosed {
		t.Errorf("All: %+v, %v", all, err)
	}
	if len(events) != 5 {
		t.Fatalf("%d hook events, want 5", len(events))
	}
	if e := events[2]; e.Err == nil || e.Cost != 2 || e.Name != "none" || e.Key != "k" {
		t.Errorf("event of the failed call: %+v", e)
	}
	if e := events[1]; e.Err != nil || e.Cost != 0 || e.Decision.Fallback != ratelimit.FailClosed {
		t.Errorf("event of the fallback: %+v", e)
	}
}

// A hung server cannot hold a decision past its timeout, whatever the
// client's own timeouts (here go-redis waits 3 s for a reply), and the
// abandoned calls end with their connections: no goroutine is left.
func TestTimeoutBoundsDecisions(t *testing.T) {
	defer goleak.VerifyNone(t)
	addr, stop := hungServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	const timeout = 100 * time.Millisecond
	// The bound holds on a loaded machine: a decision must end within the
	// timeout plus scheduling slack, far below go-redis's 3 s.
	const slack = 900 * time.Millisecond
	for _, fb := range []ratelimit.Fallback{ratelimit.FailOpen, ratelimit.FailClosed, {}} {
		l := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithFallback(fb), ratelimit.WithTimeout(timeout))
		start := time.Now()
		d, err := l.Allow(ctx, "k")
		took := time.Since(start)
		if took < timeout || took > timeout+slack {
			t.Errorf("%v: the decision took %v with a timeout of %v", fb, took, timeout)
		}
		cause := d.Cause
		if fb == (ratelimit.Fallback{}) {
			cause = err
		} else if err != nil || d.Fallback != fb || d.Allowed != (fb == ratelimit.FailOpen) {
			t.Errorf("%v: %+v, %v", fb, d, err)
		}
		if !errors.Is(cause, ratelimit.ErrUnavailable) {
			t.Errorf("%v: cause %v, want ErrUnavailable", fb, cause)
		}

		start = time.Now()
		all, err := mustAll(t, l, newNamed(t, rdb, "window", ratelimit.FixedWindow, ratelimit.WithFallback(fb))).AllowN(ctx, "k", 1)
		if took := time.Since(start); took > timeout+slack {
			t.Errorf("%v: All took %v", fb, took)
		}
		if fb != (ratelimit.Fallback{}) && (err != nil || all.Parts[0].Fallback != fb || all.Parts[1].Fallback != fb) {
			t.Errorf("%v: All: %+v, %v", fb, all, err)
		}
	}
	// Stop the server and the client now: the abandoned calls end with
	// their connections, before goleak looks (cleanups run after it).
	stop()
	rdb.Close()
}

// A caller that gives up gets its context's error: a fallback decides
// for outages, not for requests nobody waits for.
func TestCallerCancelIsNoOutage(t *testing.T) {
	addr, _ := hungServer(t)
	// ContextTimeoutEnabled: without a limiter timeout, go-redis itself
	// must heed the context, or it waits for its ReadTimeout (3 s).
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	for _, timeout := range []time.Duration{0, time.Minute} {
		l := newLimiter(t, rdb, ratelimit.GCRA, ratelimit.WithFallback(ratelimit.FailOpen), ratelimit.WithTimeout(timeout))
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		d, err := l.Allow(c, "k")
		cancel()
		if err == nil || errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed || d.Cause != nil {
			t.Errorf("timeout %v: %+v, %v, want the context's error", timeout, d, err)
		}
	}
}
