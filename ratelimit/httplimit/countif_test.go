package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// "At most 5 failed logins in 15 minutes" through WithCountIf, on a real
// Redis: 200 wrong passwords for one address at once, 10 times over. Each
// request reserves 1 before the handler, so at most 5 reach it (peeking
// before the handler and counting after it let 191 of 200 through here,
// 200 with a lockout), and
// with a lockout the fifth failure starts it. A right password gives its
// unit back.
func TestCountIfBruteForceConcurrent(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"limit", nil},
		{"lockout", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(time.Hour)}},
		// The lockout's own default: it counts in a sliding log.
		{"lockout-log", []ratelimit.Option{ratelimit.WithLockout(time.Hour)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			guard, err := ratelimit.New(rdb, "login-"+tt.name, ratelimit.Per(5, 15*time.Minute), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			var reached atomic.Int64
			login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached.Add(1)
				if r.Header.Get("X-Password") != "right" {
					w.WriteHeader(http.StatusUnauthorized)
				}
			})
			failed := httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized })
			h := httplimit.Middleware(guard, httplimit.ByClientIP(), failed)(login)
			const key = "ip:192.0.2.7"
			for run := 0; run < 10; run++ {
				if err := guard.Reset(ctx, key); err != nil {
					t.Fatal(err)
				}
				// A success gives its unit back: 5 of 5 are left.
				if code := serve(h, get("192.0.2.7:1", "X-Password", "right")).Code; code != 200 {
					t.Fatalf("run %d: the right password: %d", run, code)
				}
				if d, err := guard.Peek(ctx, key); err != nil || d.Remaining != 5 {
					t.Fatalf("run %d: after a success %d left (%v), want 5", run, d.Remaining, err)
				}
				reached.Store(0)
				var codes [600]atomic.Int64
				var wg sync.WaitGroup
				for i := 0; i < 200; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						codes[serve(h, get("192.0.2.7:1", "X-Password", "wrong")).Code].Add(1)
					}()
				}
				wg.Wait()
				if n := reached.Load(); n > 5 {
					t.Fatalf("run %d: %d of 200 wrong passwords reached the handler, want at most 5", run, n)
				}
				if n := codes[401].Load() + codes[429].Load(); n != 200 {
					t.Fatalf("run %d: %d of 200 answered 401 or 429", run, n)
				}
				if n := codes[401].Load(); n != 5 {
					t.Fatalf("run %d: %d failures counted, want 5", run, n)
				}
				d, err := guard.Peek(ctx, key)
				if err != nil || d.Allowed || d.Remaining != 0 {
					t.Fatalf("run %d: after the attack %v, %v; want denied, 0 left", run, d, err)
				}
				if locked := tt.opts != nil; d.LockedOut != locked {
					t.Fatalf("run %d: locked out %v, want %v", run, d.LockedOut, locked)
				}
			}
		})
	}
}

// Under WithCountIf a request All denies runs no handler and counts
// nowhere: what All counted in its other rules is given back. A rule
// whose Reserve fails is a 500 that says why.
func TestCountIfGivesBack(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	wide, _ := ratelimit.New(f.rdb, "wide", ratelimit.PerMinute(10))
	narrow, _ := ratelimit.New(f.rdb, "narrow", ratelimit.PerMinute(1))
	both, err := ratelimit.All(wide, narrow)
	if err != nil {
		t.Fatal(err)
	}
	failed := httplimit.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized })
	var ran int
	h := httplimit.Middleware(both, httplimit.ByClientIP(), failed)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		w.WriteHeader(http.StatusUnauthorized)
	}))
	codes := []int{serve(h, get("192.0.2.1:1")).Code, serve(h, get("192.0.2.1:1")).Code}
	if codes[0] != 401 || codes[1] != 429 || ran != 1 {
		t.Fatalf("two failures under 1 a minute: %v, the handler ran %d times; want [401 429], once", codes, ran)
	}
	if d, _ := wide.Peek(ctx, "ip:192.0.2.1"); d.Remaining != 9 {
		t.Errorf("wide has %d left, want 9: the denied request was given back", d.Remaining)
	}

	// A response given back shows the limit as it stands after the give-back.
	login, _ := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(3))
	ok := httplimit.Middleware(login, httplimit.ByClientIP(), failed)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i := 0; i < 2; i++ {
		rec := serve(ok, get("192.0.2.1:1"))
		if got := rec.Result().Header.Get("X-RateLimit-Remaining"); rec.Code != 200 || got != "3" {
			t.Errorf("success %d: %d, X-RateLimit-Remaining %q; want 200 and 3 (given back)", i+1, rec.Code, got)
		}
	}

	// A Rule of the user's own whose Reserve fails: a 500 with its error,
	// and no handler.
	refusing := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return noReserve{login}, nil })
	ran = 0
	rec := serve(httplimit.Middleware(refusing, httplimit.ByClientIP(), failed)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ })), get("192.0.2.1:1"))
	if p := problemOf(t, rec); rec.Code != 500 || !strings.Contains(p.Detail, "no reservations here") || ran != 0 {
		t.Errorf("a rule whose Reserve fails: %d %+v, the handler ran %d times; want 500 with its error, no handler", rec.Code, p, ran)
	}
}

// noReserve is a Rule of the user's own that cannot reserve.
type noReserve struct{ ratelimit.Rule }

func (noReserve) Reserve(context.Context, string, int64) (*ratelimit.Reservation, error) {
	return nil, fmt.Errorf("%w: no reservations here", ratelimit.ErrInvalid)
}
