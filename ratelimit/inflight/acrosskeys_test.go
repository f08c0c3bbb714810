package inflight_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

// gate is a go-redis hook that notes each script call's key count and
// holds the first two at a gate: two is how many calls of a group the
// send stage across keys keeps in flight, so calls that come next wait
// for one of them to return.
type gate struct {
	open chan struct{}
	held atomic.Int64
	mu   sync.Mutex
	keys []int64 // each script call's key count
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		if g.held.Add(1) <= 2 {
			<-g.open
		}
		n, err := strconv.ParseInt(fmt.Sprint(cmd.Args()[2]), 10, 64) // an int or an int64
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.keys = append(g.keys, n)
		g.mu.Unlock()
		return next(ctx, cmd)
	}
}

// reset holds the next two script calls, and forgets the calls seen.
func (g *gate) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.keys = make(chan struct{}), nil
	g.held.Store(0)
}

// seen returns the key counts of the script calls that passed the gate.
func (g *gate) seen() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.keys...)
}

// run runs do on each of n goroutines once two calls wait at the gate
// (the first two: calls of their own), then opens it a moment later, when
// the others wait in the stage's line (well within the 100 ms after which
// a line that has had no answer lets calls go on their own).
func (g *gate) run(t *testing.T, n int, do func(i int)) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(i)
		}()
		if i == 1 {
			for g.held.Load() < 2 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(g.open)
	wg.Wait()
}

// Acquires on other keys go together, as one call of concurrency.lua's
// multi-key form, each with its own answer; so do releases, each with its
// caller's deadline, so that one reported dropped, which a batch may
// still carry to Redis, changes nothing there once it is past
// (TestStallReleasesPastTheBound, in tests/servers).
func TestAcquiresGoTogether(t *testing.T) {
	ctx := context.Background()
	g := &gate{}
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr(), PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(g)
	l, err := inflight.New(rdb, "together", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// 32 keys; "k2" three times, over its cap of 2.
	keys := make([]string, 34)
	for i := range 32 {
		keys[i] = fmt.Sprint("k", i)
	}
	keys[32], keys[33] = "k2", "k2"
	leases := make([]*inflight.Lease, len(keys))
	decisions := make([]inflight.Decision, len(keys))
	g.reset()
	g.run(t, len(keys), func(i int) {
		var err error
		if leases[i], decisions[i], err = l.Acquire(ctx, keys[i]); err != nil {
			t.Errorf("acquire %s: %v", keys[i], err)
		}
	})
	k2 := 0
	for i, d := range decisions {
		if keys[i] == "k2" {
			if d.Allowed {
				k2++
			}
			continue
		}
		if !d.Allowed || d.Remaining != 1 {
			t.Errorf("%s: %v, want allowed with 1 left", keys[i], d)
		}
	}
	if k2 != 2 {
		t.Errorf("k2 admitted %d of 3 acquires, want 2 (its cap)", k2)
	}
	together(t, "acquires", len(keys), g.seen())

	g.reset()
	g.run(t, len(keys), func(i int) {
		if err := leases[i].Release(ctx); err != nil {
			t.Errorf("release %s: %v", keys[i], err)
		}
	})
	together(t, "releases", len(keys)-1, g.seen()) // one acquire of k2 was denied: no lease
	for _, k := range keys[:32] {
		if n := rdb.Exists(ctx, l.RedisKey(k)).Val(); n != 0 {
			t.Errorf("%s: leases still held after every release", k)
		}
	}
}

// A release carries its caller's deadline, as an acquire does: the send
// stage may bring it to Redis after its caller gave up and was told it
// failed (concurrency.lua then answers EXPIRED and changes nothing).
func TestReleaseCarriesItsDeadline(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	var mu sync.Mutex
	var release []any
	rdb.AddHook(testredis.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if args := cmd.Args(); len(args) == 10 && args[4] == "release" {
			mu.Lock()
			release = args
			mu.Unlock()
		}
		return next(ctx, cmd)
	}})
	l, err := inflight.New(rdb, "deadline", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lease, _, err := l.Acquire(ctx, "k")
	if err != nil || lease == nil {
		t.Fatalf("acquire: %v %v", lease, err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	due, _ := dctx.Deadline()
	if err := lease.Release(dctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if release == nil {
		t.Fatal("no release call seen")
	}
	got, err := strconv.ParseInt(fmt.Sprint(release[9]), 10, 64)
	if err != nil || got < due.UnixMicro()-1000 || got > due.UnixMicro()+1000 {
		t.Errorf("the release sent deadline %v, want its caller's, %d µs", release[9], due.UnixMicro())
	}
}

// together fails t unless n calls went as fewer calls, one of many keys at
// least (calls holds each call's key count).
func together(t *testing.T, what string, n int, calls []int64) {
	t.Helper()
	batched := 0
	for _, k := range calls {
		if k > 1 {
			batched++
		}
	}
	if batched == 0 || len(calls) >= n {
		t.Errorf("%d %s went as %d calls of %v keys: none together", n, what, len(calls), calls)
	}
}

// Impatient acquirers beside calm ones, through the stage on a real Redis:
// 60 calm callers on keys of their own each hold their lease, and 60 that
// give up after 1 µs to 20 ms, before or after their batch is sent, leave no
// lease behind once the background releases have run (an acquire Redis
// runs past its deadline takes nothing; one it runs in time for a caller
// who left is given back by forget), while those answered in time hold
// theirs. Three rounds, on fresh keys.
func TestImpatientAcquiresLeaveNoLease(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	l, err := inflight.New(rdb, "impatient", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const n = 120
	for round := range 3 {
		keys := make([]string, n)
		held := make([]bool, n) // the caller was answered with a lease
		var wg sync.WaitGroup
		for i := range n {
			keys[i] = fmt.Sprintf("r%d-k%d", round, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				if i%2 == 1 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Microsecond+time.Duration(rand.Int64N(int64(20*time.Millisecond))))
					defer cancel()
				}
				lease, d, err := l.Acquire(ctx, keys[i])
				switch {
				case err == nil && d.Allowed && lease != nil:
					held[i] = true
				case i%2 == 0:
					t.Errorf("calm %s: %v %v", keys[i], d, err)
				case err == nil:
					t.Errorf("impatient %s: denied on a key of its own: %v", keys[i], d)
				}
			}()
		}
		wg.Wait()
		// The leases Redis holds must come to exactly those answered.
		var last string
		for deadline := time.Now().Add(10 * time.Second); ; {
			last = ""
			for i, k := range keys {
				want := int64(0)
				if held[i] {
					want = 1
				}
				if live := rdb.ZCard(context.Background(), l.RedisKey(k)).Val(); live != want {
					last = fmt.Sprintf("%s holds %d leases, want %d (answered with a lease: %v)", k, live, want, held[i])
					break
				}
			}
			if last == "" || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if last != "" {
			t.Fatalf("round %d, 10 s on: %s", round, last)
		}
		answered := 0
		for i := 1; i < n; i += 2 {
			if held[i] {
				answered++
			}
		}
		t.Logf("round %d: %d of %d impatient acquires answered in time", round, answered, n/2)
	}
}
