package inflight_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

// dropCounter is a hook that counts the releases reported dropped.
type dropCounter struct{ n atomic.Int64 }

func (d *dropCounter) hook(_ context.Context, e inflight.Event) {
	if e.Op == "release" && errors.Is(e.Err, inflight.ErrReleaseDropped) {
		d.n.Add(1)
	}
}

// held counts the leases held on keys at the frozen server's clock.
func held(f *frozen, l *inflight.Limiter, keys ...string) (int64, error) {
	var n int64
	for _, k := range keys {
		c, err := f.rdb.ZCount(ctx, l.RedisKey(k), fmt.Sprintf("(%d", f.Now.UnixMicro()), "+inf").Result()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// untilHeld waits up to 20 s for want leases to be held on keys. (The
// client's pool answers with its last dial error for up to a second after
// the server is back.)
func untilHeld(t *testing.T, f *frozen, l *inflight.Limiter, want int64, keys ...string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := held(f, l, keys...)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d leases held 20 s after the server came back (%v), want %d", got, err, want)
		}
	}
}

// The releases of held leases come first: a full bound of failed
// acquires' releases makes room for them, each it drops reported. Every
// call's answer is lost meanwhile (a hook fails it unsent, as a cut
// connection would after sending: the client cannot tell), so each
// acquire may have taken a lease and keeps a release; a dead server would
// open the breaker, whose acquires are never sent and keep none.
func TestHeldReleasesComeFirst(t *testing.T) {
	f := newFrozen(t)
	var lost atomic.Bool
	f.rdb.AddHook(answersLost(&lost))
	drops := &dropCounter{}
	l := mustConcurrency(t, f.rdb, 100, time.Hour, inflight.WithHook(drops.hook), inflight.WithFallback(ratelimit.FailClosed))
	var leases []*inflight.Lease
	for i := 0; i < 20; i++ {
		lease, _, err := l.Acquire(ctx, "held")
		if err != nil || lease == nil {
			t.Fatalf("acquire: %v", err)
		}
		leases = append(leases, lease)
	}
	lost.Store(true)
	// MaxPending failed acquires fill the bound with their releases, from
	// 8 goroutines while the sender takes batches; one more is dropped.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < inflight.MaxPending/8; i++ {
				if _, d, err := l.Acquire(ctx, "x"); err != nil || d.Fallback != ratelimit.FailClosed {
					t.Errorf("an acquire on a dead server: %v %v", d, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, _, err := l.Acquire(ctx, "x"); err != nil || drops.n.Load() != 1 {
		t.Fatalf("one acquire past the bound: %v, %d drops reported, want 1", err, drops.n.Load())
	}
	for _, lease := range leases {
		if err := lease.Release(ctx); !errors.Is(err, ratelimit.ErrUnavailable) || errors.Is(err, inflight.ErrReleaseDropped) {
			t.Fatalf("a holder's Release with the bound full of acquires' releases: %v, want it kept", err)
		}
	}
	if got := drops.n.Load(); got != 1+20 {
		t.Errorf("%d drops reported, want 21: one acquire's past the bound, then one for each holder's release", got)
	}
	lost.Store(false)
	untilHeld(t, f, l, 0, "held")
}

// An acquire the open breaker fails was never sent, so it keeps no
// release: on a dead server, MaxPending+100 acquires report no release
// dropped (each kept one, and the 100 past the bound were dropped and
// reported, before).
func TestRefusedAcquiresKeepNoRelease(t *testing.T) {
	f := newFrozen(t)
	drops := &dropCounter{}
	l := mustConcurrency(t, f.rdb, 100, time.Hour, inflight.WithHook(drops.hook), inflight.WithFallback(ratelimit.FailClosed))
	if _, _, err := l.Acquire(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := 0; i < inflight.MaxPending+100; i++ {
		if _, d, err := l.Acquire(ctx, "x"); err != nil || d.Fallback != ratelimit.FailClosed {
			t.Fatalf("an acquire on a dead server: %v %v", d, err)
		}
	}
	if n := drops.n.Load(); n != 0 {
		t.Errorf("%d releases dropped and reported for acquires that were never sent", n)
	}
}

// answersLost fails every command and pipeline, unsent, while on: its
// answer is lost.
func answersLost(on *atomic.Bool) testredis.Hook {
	return testredis.Hook{
		Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
			if !on.Load() {
				return next(ctx, cmd)
			}
			cmd.SetErr(errAnswerLost)
			return errAnswerLost
		},
		Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			if !on.Load() {
				return next(ctx, cmds)
			}
			for _, c := range cmds {
				c.SetErr(errAnswerLost)
			}
			return errAnswerLost
		},
	}
}

var errAnswerLost = errors.New("the answer was lost")

// A closed client ends the background releases: nothing it is given can
// be sent any more, so each is dropped and reported, and the goroutine
// that sends them returns instead of trying until the leases expire (an
// hour here).
func TestReleasesEndWithTheClient(t *testing.T) {
	f := newFrozen(t)
	rdb := redis.NewClient(&redis.Options{Addr: f.Addr()})
	var drops dropCounter
	c := mustConcurrency(t, rdb, 10, time.Hour, inflight.WithHook(drops.hook))
	lease, d, err := c.Acquire(ctx, "u")
	if err != nil || !d.Allowed {
		t.Fatalf("acquire: %v %v", d, err)
	}
	rdb.Close()
	// The release fails on the closed client and is kept for the
	// background, which finds the client closed.
	if err := lease.Release(ctx); !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Fatalf("a Release on a closed client: %v, want ErrUnavailable", err)
	}
	for deadline := time.Now().Add(5 * time.Second); drops.n.Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d releases reported dropped 5 s after the client closed, want 1", drops.n.Load())
		}
	}
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}
