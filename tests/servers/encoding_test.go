package servers

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// bytesPerKey is what a key holding an integer state costs each server CI
// runs (make test-matrix), by INFO memory: used_memory after minus before,
// over stateKeys keys written on an emptied server, 18-character names
// and a TTL included (the value, the key, the expiry and their share of
// the server's tables). BENCHMARKS.md and docs/scripts.md quote it.
var bytesPerKey = map[string]float64{
	"Redis 7.0":  133,
	"Redis 8.0":  133,
	"Valkey 8.0": 117,
	"Valkey 8.1": 75,
}

const stateKeys = 50000

// TestStateBytesPerKey: the states whose headers say Redis keeps them as
// an integer (the token bucket with at most 3 digits of tokens, the fixed
// window, GCRA's and multi.lua's short form) cost a server what a 19-digit
// integer value costs, and at most bytesPerKey on the servers CI runs;
// the long forms cost at least 16 B a key more. That is the promise
// behind GCRA's memory per key (BENCHMARKS.md), whatever encoding a
// server names: Valkey 8.1 keeps the long forms raw where Redis 7.0 has
// embstr. On a server bytesPerKey does not list, only the comparisons
// run, and the test logs its figures.
func TestStateBytesPerKey(t *testing.T) {
	addr := redisserver.Start(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	server := serverName(t, c)

	// A fixed window's key lives until its window ends: take a window that
	// ends 10 minutes from now or later (the state is the same).
	now := serverTime(t, c) / 1000
	window := int64(3600000)
	for window-now%window < 600000 {
		window += 60000
	}
	run := func(script string, calls ...[]any) func(p redis.Pipeliner, key string) {
		return func(p redis.Pipeliner, key string) {
			for _, argv := range calls {
				scripts[script].EvalSha(ctx, p, []string{key}, argv...)
			}
		}
	}
	// Every key lives 99 s or more: none expires while it is measured.
	cases := []struct {
		name    string
		write   func(p redis.Pipeliner, key string)
		integer bool
	}{
		{"a 19-digit integer", func(p redis.Pipeliner, key string) { p.Set(ctx, key, "1234567890123456789", time.Hour) }, true},
		// 100 in 10 h: 99 tokens (3 digits at most).
		{"token bucket", run("token_bucket", []any{100, 100, 36000000, 0, "smooth", 1, 0}), true},
		{"fixed window", run("fixed_window", []any{100, window, 1, 0, 0}), true},
		// One request on an idle key: a TAT one interval (99 s) ahead.
		{"gcra, one request", run("gcra", []any{100, 100, 9900000, 0, "all", 1, 0}), true},
		{"gcra at_most, one taken", run("gcra", []any{100, 100, 9900000, 0, "at_most", 1, 0}), true},
		{"multi, one request", run("multi", []any{1, 0, 0, 100, 100, 9900000}), true},
		{"token bucket, 4 digits of tokens", run("token_bucket", []any{10000, 10000, 360000000, 0, "smooth", 5, 0}), false},
		{"gcra at_most, five taken", run("gcra", []any{100, 100, 9900000, 0, "at_most", 5, 0}), false},
		{"gcra, two requests", run("gcra", []any{100, 100, 9900000, 0, "all", 1, 0}, []any{100, 100, 9900000, 0, "all", 1, 0}), false},
		{"gcra, two requests in one call", run("gcra", []any{100, 100, 9900000, 0, "all", 1, 0, 1, 0}), false},
		{"gcra, an interval of 100 s", run("gcra", []any{10, 36, 3600000, 0, "all", 1, 0}), false},
	}
	for _, s := range scripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() {
		t.Helper()
		if err := c.Do(ctx, "FLUSHALL", "SYNC").Err(); err != nil {
			t.Fatal(err)
		}
	}
	fill := func(name string, write func(p redis.Pipeliner, key string), n int) {
		t.Helper()
		// Pipelines of 100 calls: the server's buffers for them, which it
		// grows and shrinks as it likes, stay near 10 KB (0.2 B a key).
		for i := 0; i < n; i += 100 {
			p := c.Pipeline()
			for k := i; k < i+100; k++ {
				write(p, fmt.Sprintf("rl:{user:%08d}", k))
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	// The first calls grow the connection's buffers and the script cache,
	// which is no key's cost.
	for _, tc := range cases {
		flush()
		fill(tc.name, tc.write, 100)
	}
	most, known := bytesPerKey[minor(server)]
	var integer float64
	for _, tc := range cases {
		flush()
		before := usedMemory(t, c, 0) // FLUSHALL SYNC has freed all
		fill(tc.name, tc.write, stateKeys)
		if n := c.DBSize(ctx).Val(); n != stateKeys {
			t.Fatalf("%s: %d keys, want %d (one expired while measured)", tc.name, n, stateKeys)
		}
		got := float64(usedMemory(t, c, 5)-before) / stateKeys
		key := "rl:{user:00000000}"
		t.Logf("%s, %s: %.1f B a key (%q, %s)", server, tc.name, got, c.Get(ctx, key).Val(), c.ObjectEncoding(ctx, key).Val())
		// 3 B a key is 150 KB here: what the server allocates besides the
		// keys moved a figure by up to 0.8 B a key in the runs made, and a
		// long form costs 32 B a key more than an integer on every server.
		if integer == 0 {
			integer = got
		}
		switch {
		case tc.integer && math.Abs(got-integer) > 3:
			t.Errorf("%s: %s costs %.1f B a key, want a 19-digit integer's %.1f (±3)", server, tc.name, got, integer)
		case tc.integer && known && got > most+3:
			t.Errorf("%s: %s costs %.1f B a key, want at most %.0f (+3)", server, tc.name, got, most)
		case !tc.integer && got < integer+16:
			t.Errorf("%s: %s costs %.1f B a key, want a long form's, 16 B or more above an integer's %.1f", server, tc.name, got, integer)
		}
	}
	if !known {
		t.Logf("%s is not in bytesPerKey: only the comparisons ran", server)
	}
}

// minor is "Redis 7.0" for "Redis 7.0.15".
func minor(server string) string {
	if i := strings.LastIndexByte(server, '.'); i > strings.IndexByte(server, '.') {
		return server[:i]
	}
	return server
}

// serverName is "Redis 7.0.15" or "Valkey 8.1.1", from INFO server.
func serverName(t *testing.T, c *redis.Client) string {
	t.Helper()
	s, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	f := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	if f["server_name"] == "valkey" {
		return "Valkey " + f["valkey_version"]
	}
	return "Redis " + f["redis_version"]
}

// usedMemory reads used_memory once it has held still for holds reads
// 100 ms apart.
func usedMemory(t *testing.T, c *redis.Client, holds int) int64 {
	t.Helper()
	read := func() int64 {
		s, err := c.Info(context.Background(), "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("INFO memory has no used_memory")
		return 0
	}
	// A grown table's old half is freed when the server's cron has moved
	// every entry (10 times a second): 5 holds are 500 ms.
	last, held := read(), 0
	for i := 0; i < 100 && held < holds; i++ {
		time.Sleep(100 * time.Millisecond)
		now := read()
		if now == last {
			held++
		} else {
			last, held = now, 0
		}
	}
	if held < holds {
		t.Fatalf("used_memory did not hold still for %d ms in 10 s", holds*100)
	}
	return last
}
