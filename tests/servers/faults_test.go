package servers

// What the faults of the server underneath cost a limiter, measured on
// real servers of the tests' own: docs/operations.md quotes these tests.

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/scriptingtest"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

// A restart without persistence forgets every limit; with AOF it keeps
// them.
func TestFaultRestart(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		args  []string
		reset bool
	}{
		{"no persistence", nil, true},
		{"AOF everysec", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redisserver.New(t, tt.args...)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			defer rdb.Close()
			l, err := ratelimit.New(rdb, "restart", ratelimit.Per(5, 24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
					t.Fatalf("call %d: %v, %v", i, d, err)
				}
			}
			if d, _ := l.Allow(ctx, "k"); d.Allowed {
				t.Fatal("a sixth call of five a day was allowed")
			}
			if tt.args != nil {
				// everysec may hold the AOF write itself (not only the
				// fsync) while a background fsync is slow, for up to 2 s:
				// TestFaultKill9AOF measures that. Here, the restart of a
				// server that had written its AOF.
				aofWritten(t, rdb)
			}
			srv.Stop()
			srv.Restart()
			d, err := fromRedisD(ctx, l, "k")
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.reset {
				t.Errorf("after the restart: allowed %v (remaining %d), want %v", d.Allowed, d.Remaining, tt.reset)
			}
			t.Logf("after a restart: allowed %v, remaining %d of 5 a day", d.Allowed, d.Remaining)
		})
	}
}

// kill -9 under load with AOF everysec: what Redis acknowledged and what
// it holds after the restart. A process crash loses what Redis had not yet
// written to the kernel: nothing, as a rule, but everysec postpones the
// write while a background fsync is slow (a busy disk), for up to 2 s.
// So every admission acknowledged more than 2 s before the kill must be
// there, and nothing that was never sent.
func TestFaultKill9AOF(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.New(t, "--appendonly", "yes", "--appendfsync", "everysec")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	l, err := ratelimit.New(rdb, "kill9", ratelimit.Per(1e9, time.Hour), ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	acks := make([][]time.Time, workers) // when each admission was acknowledged
	var wg sync.WaitGroup
	var dead atomic.Bool
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !dead.Load() {
				if d, err := l.Allow(ctx, "k"); err == nil && d.Allowed {
					acks[w] = append(acks[w], time.Now())
				}
			}
		}(w)
	}
	time.Sleep(3 * time.Second)
	killAt := time.Now()
	srv.Stop() // SIGKILL, under load
	dead.Store(true)
	wg.Wait()
	srv.Restart()
	d, err := fromRedisD(ctx, l, "k")
	if err != nil {
		t.Fatal(err)
	}
	var acked, old int64 // old: acknowledged more than 2 s before the kill
	for _, as := range acks {
		for _, a := range as {
			acked++
			if a.Before(killAt.Add(-2 * time.Second)) {
				old++
			}
		}
	}
	stored := int64(1e9) - d.Remaining - 1 // that call counted one more
	if stored < old || stored > acked+workers {
		t.Errorf("after kill -9: %d admissions stored; %d acknowledged (%d of them over 2 s before the kill), up to %d more in flight", stored, acked, old, workers)
	}
	t.Logf("kill -9 with AOF everysec: %d admissions acknowledged, %d stored after the restart (%d lost)", acked, stored, max(0, acked-stored))
}

// aofWritten waits until the server has written its AOF buffer to the
// kernel and no fsync is pending.
func aofWritten(t *testing.T, c *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := c.Info(context.Background(), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "aof_buffer_length:0\r\n") && strings.Contains(info, "aof_pending_bio_fsync:0\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AOF was not written within 10 s:\n%s", info)
		}
	}
}

// Memory full: what each eviction policy does to limits. 400 users
// exhaust a limit of 10 an hour; then data without TTLs fills memory past
// maxmemory. volatile-lru evicts the limiter keys (the only ones with a
// TTL) before any data, and once they are gone refuses writes as
// noeviction does; allkeys-lru evicts both; noeviction keeps every limit
// (denials still come from Redis), refuses writes with OOM, and a limiter
// that fails open admits every key that would need a write.
func TestFaultEviction(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{"volatile-lru", "allkeys-lru", "noeviction"} {
		t.Run(policy, func(t *testing.T) {
			srv := redisserver.New(t, "--maxmemory", "8mb", "--maxmemory-policy", policy)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			defer rdb.Close()
			l, err := ratelimit.New(rdb, "evict", ratelimit.Per(10, time.Hour), ratelimit.WithFallback(ratelimit.FailOpen))
			if err != nil {
				t.Fatal(err)
			}
			const users = 400
			for u := 0; u < users; u++ {
				if _, err := l.AllowN(ctx, fmt.Sprint("user", u), 10); err != nil {
					t.Fatal(err)
				}
			}
			// 12 MB of data without TTLs into 8 MB.
			value := strings.Repeat("x", 1024)
			written, oom := 0, 0
			for i := 0; i < 12*1024; i++ {
				err := rdb.Set(ctx, fmt.Sprint("data", i), value, 0).Err()
				switch {
				case err == nil:
					written++
				case strings.HasPrefix(err.Error(), "OOM"):
					oom++
				default:
					t.Fatal(err)
				}
			}
			limiterLeft := 0
			for u := 0; u < users; u++ {
				if n, _ := rdb.Exists(ctx, testredis.Key("rl:evict:", fmt.Sprint("user", u))).Result(); n == 1 {
					limiterLeft++
				}
			}
			size, err := rdb.DBSize(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			dataLeft := int(size) - limiterLeft
			reset, fromPolicy := 0, 0
			for u := 0; u < users; u++ {
				d, err := l.Allow(ctx, fmt.Sprint("user", u))
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case d.Cause != nil:
					fromPolicy++
				case d.Allowed:
					reset++
				}
			}
			newKey, _ := l.Allow(ctx, "a-new-user")
			t.Logf("%s: %d of %d exhausted limiter keys evicted; their next call: %d allowed by Redis, %d decided by the fallback; data: %d written, %d refused (OOM), %d left; a new key: allowed %v, fallback %v",
				policy, users-limiterLeft, users, reset, fromPolicy, written, oom, dataLeft, newKey.Allowed, newKey.Fallback)
			switch policy {
			case "volatile-lru":
				if limiterLeft > 0 || dataLeft != written {
					t.Errorf("volatile-lru: %d limiter keys left, %d of %d data keys: limiter keys should go first", limiterLeft, dataLeft, written)
				}
			case "allkeys-lru":
				if dataLeft == written || limiterLeft == users {
					t.Errorf("allkeys-lru: %d of %d data keys and %d of %d limiter keys left; want both evicted", dataLeft, written, limiterLeft, users)
				}
			case "noeviction":
				if limiterLeft != users || reset != 0 || fromPolicy != 0 || oom == 0 {
					t.Errorf("noeviction: %d limiter keys left, %d reset, %d by the policy, %d writes refused; want every limit kept and still denying", limiterLeft, reset, fromPolicy, oom)
				}
				if !newKey.Allowed || newKey.Fallback != ratelimit.FailOpen || !strings.Contains(fmt.Sprint(newKey.Cause), "OOM") {
					t.Errorf("noeviction, memory full: a new key %v; want FailOpen's admission (the script's write refused with OOM)", newKey)
				}
			}
		})
	}
}

// fromRedisD decides until Redis decides (no fallback, no error), for at
// most 5 s.
func fromRedisD(ctx context.Context, l *ratelimit.Limiter, key string) (ratelimit.Decision, error) {
	var d ratelimit.Decision
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if d, err = l.Allow(ctx, key); err == nil && d.Cause == nil {
			return d, nil
		}
	}
	return d, fmt.Errorf("no decision from Redis 5 s after the restart: %v, %v", d, err)
}

// Issue 24.3: a server killed (SIGKILL) under load and started again, with
// and without persistence, through EVALSHA and through the Functions
// library: decisions come from Redis again within a second of the server
// first answering PING, before the client's own pool can dial it, and
// until then the fallback decides them at once. (They waited for
// the pool, which answers with its last dial error until its own redial,
// once a second, succeeds: 0.9-1.05 s.)
func TestFaultRestartRecovers(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		fn   bool
	}{
		{"no persistence", nil, false},
		{"AOF everysec", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, false},
		{"no persistence, FCALL", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redisserver.New(t, tt.args...)
			// A small pool: the calls in flight at the kill fail PoolSize
			// dials for sure, and the pool answers with its last dial
			// error from then on until its redial, once a second, gets
			// through.
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4})
			defer rdb.Close()
			var c ratelimit.Client = rdb
			if tt.fn {
				c = bindings.WithFunctions(rdb)
			}
			l, err := ratelimit.New(c, "restart", ratelimit.PerSecond(1e6), ratelimit.WithFallback(ratelimit.FailOpen))
			if err != nil {
				t.Fatal(err)
			}
			callers := scriptingtest.StartPaced(t, tt.name, l)
			time.Sleep(300 * time.Millisecond)
			killAt := time.Now()
			srv.Stop()
			// The worst moment to come back: just after the pool's redial
			// failed, a second before its next one.
			redialed(t, rdb)
			answered := make(chan time.Time, 1)
			go func() { answered <- firstPong(srv.Addr, 10*time.Second) }()
			srv.Restart()
			answeredAt := <-answered
			poolBack := firstPing(rdb, 5*time.Second) // the client's own pool dials again
			time.Sleep(1500 * time.Millisecond)
			calls := callers.Stop()
			if answeredAt.IsZero() {
				t.Fatal("the restarted server never answered PING")
			}

			var down, healthy []time.Duration
			var back time.Duration // until the last fallback after the first PONG
			var firstFromRedis time.Time
			fromRedis := 0
			for _, e := range calls {
				switch {
				case e.Start.Before(killAt):
					healthy = append(healthy, e.Took)
				case e.Start.Before(killAt.Add(300 * time.Millisecond)):
					// the calls in flight at the kill meet go-redis's retries
				case e.Start.Before(answeredAt):
					if e.Fallback {
						down = append(down, e.Took)
					}
				case e.Fallback:
					back = max(back, e.Start.Add(e.Took).Sub(answeredAt))
				default:
					fromRedis++
					if end := e.Start.Add(e.Took); firstFromRedis.IsZero() || end.Before(firstFromRedis) {
						firstFromRedis = end
					}
				}
			}
			if back > time.Second {
				t.Errorf("decisions fell back until %v after the server answered PING, want within 1s", back)
			}
			if fromRedis == 0 || poolBack.IsZero() {
				t.Fatalf("no decision from Redis after the restart (%d), or the client never dialled again (%v)", fromRedis, poolBack)
			}
			// Not by waiting for go-redis: decisions came from Redis while
			// the client's own pool could not dial yet (a second after its
			// last redial, at this moment).
			if !firstFromRedis.Before(poolBack.Add(-20 * time.Millisecond)) {
				t.Errorf("the first decision from Redis came %v after the first PONG, the client's own pool dialled again %v after it: the limiter waited for go-redis",
					firstFromRedis.Sub(answeredAt).Round(time.Millisecond), poolBack.Sub(answeredAt).Round(time.Millisecond))
			}
			if len(down) == 0 {
				t.Fatal("no decision fell back while the server was down: the kill tested nothing")
			}
			// Fail fast: within 5 ms at the 99th percentile, unless this
			// (busy) machine made round trips to a healthy server slower.
			if p99, hp99 := pct(down, 99), pct(healthy, 99); p99 > 5*time.Millisecond && p99 > hp99 {
				t.Errorf("while down, fallbacks took p99 %v (round trips before the kill: %v), want <= 5ms (fail fast)", p99, hp99)
			}
			t.Logf("while down: %d fallbacks, p50 %v p99 %v; decisions from Redis again %v after the first PONG (the client's own pool: %v)",
				len(down), pct(down, 50), pct(down, 99), back.Round(time.Millisecond), poolBack.Sub(answeredAt).Round(time.Millisecond))
		})
	}
}

// firstPing returns when c first answers PING, asking every 2 ms (a pool
// that cannot dial answers at once, without dialling), or the zero time
// after limit.
func firstPing(c *redis.Client, limit time.Duration) time.Time {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return time.Now()
		}
	}
	return time.Time{}
}

// firstPong returns when the server at addr first answers PING, asking
// every 5 ms on a connection of its own, or the zero time after limit.
func firstPong(addr string, limit time.Duration) time.Time {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			continue
		}
		conn.SetDeadline(time.Now().Add(100 * time.Millisecond))
		buf := make([]byte, 7)
		_, err = conn.Write([]byte("PING\r\n"))
		if err == nil {
			_, err = io.ReadFull(conn, buf)
		}
		conn.Close()
		if err == nil && string(buf) == "+PONG\r\n" {
			return time.Now()
		}
	}
	return time.Time{}
}

// redialed returns just after c's pool failed a redial: once PoolSize
// dials have failed it answers every call with its last dial error, and
// each redial that fails, once a second, stores a new one (a change that
// comes 900 ms or more after the one before: the calls in flight at the
// kill store theirs first).
func redialed(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	var last error
	var lastAt time.Time
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the client's pool did not redial within 10 s (last error %v)", last)
		}
		err := c.Ping(ctx).Err()
		if err == nil {
			t.Fatal("the killed server answered")
		}
		if err != last {
			if !lastAt.IsZero() && time.Since(lastAt) >= 900*time.Millisecond {
				return
			}
			last, lastAt = err, time.Now()
		}
	}
}

// Issue 30.2: a blip, a server killed and started again 50 ms later
// without persistence, under load, through EVALSHA and the Functions
// library, with go-redis's default retries and with none. The breaker fails
// the calls fast while the node is down; decisions come from Redis again
// within 150 ms of its first PONG. (They did 249 ms and 390 ms after it:
// each probe's PING of the user's client spent go-redis's retries and
// backoff on its pool's last dial error before the probe could let calls
// through.)
func TestFaultBlip(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fn      bool
		retries int
	}{
		{"EVALSHA", false, 0},
		{"FCALL", true, 0},
		{"EVALSHA, no retries", false, -1},
		{"FCALL, no retries", true, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redisserver.New(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: tt.retries})
			defer rdb.Close()
			var c ratelimit.Client = rdb
			if tt.fn {
				c = bindings.WithFunctions(rdb)
			}
			l, err := ratelimit.New(c, "blip", ratelimit.PerSecond(1e6), ratelimit.WithFallback(ratelimit.FailOpen))
			if err != nil {
				t.Fatal(err)
			}
			callers := scriptingtest.StartPaced(t, tt.name, l)
			time.Sleep(300 * time.Millisecond)
			answered := make(chan time.Time, 1)
			killAt := time.Now()
			srv.Stop()
			time.Sleep(50 * time.Millisecond)
			go func() { answered <- firstPong(srv.Addr, 10*time.Second) }()
			srv.Restart()
			answeredAt := <-answered
			time.Sleep(time.Second)
			calls := callers.Stop()
			if answeredAt.IsZero() {
				t.Fatal("the restarted server never answered PING")
			}
			fellBack := 0
			var back time.Duration // until the end of the last fallback after the first PONG
			fromRedis := 0
			for _, e := range calls {
				switch {
				case e.Start.Add(e.Took).Before(killAt):
				case e.Fallback:
					fellBack++
					back = max(back, e.Start.Add(e.Took).Sub(answeredAt))
				case e.Start.After(answeredAt):
					fromRedis++
				}
			}
			t.Logf("down %v: %d decisions by the fallback; from Redis again %v after the first PONG",
				answeredAt.Sub(killAt).Round(time.Millisecond), fellBack, back.Round(time.Millisecond))
			if fromRedis == 0 {
				t.Fatal("no decision from Redis after the restart")
			}
			if back > 150*time.Millisecond {
				t.Errorf("decisions fell back until %v after the server answered PING, want within 150ms", back.Round(time.Millisecond))
			}
		})
	}
}
