package servers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
	"github.com/redlimit/redlimit/tests/scenario"
)

// smallLimits are, per script, a limit of 2 a second (before cost and now;
// a batch script's three numbers and its word).
var smallLimits = map[string][]string{
	"token_bucket":           {"2", "1", "1000", "smooth"},
	"leaky_bucket":           {"2", "1", "1000"},
	"gcra":                   {"2", "1", "1000", "all"},
	"fixed_window":           {"2", "1000"},
	"sliding_window_counter": {"2", "1000"},
	"sliding_window_log":     {"2", "1000"},
}

type realTarget struct {
	name string
	open func(t *testing.T) redis.Scripter
}

func realTargets() []realTarget {
	return []realTarget{
		{"redis", func(t *testing.T) redis.Scripter { return standalone(t, 3) }},
		{"cluster", func(t *testing.T) redis.Scripter { return cluster(t) }},
	}
}

// evalReal runs a script file on a real server and returns its reply.
func evalReal(t *testing.T, c redis.Scripter, script, key string, args ...any) ([]int64, error) {
	t.Helper()
	src, err := luatest.Source(script)
	if err != nil {
		t.Fatal(err)
	}
	return redis.NewScript(src).Run(context.Background(), c, []string{key}, args...).Int64Slice()
}

// with is script's ARGV: the limit, cost and the clock, and a deadline of 0
// (none), where the script takes them.
func with(script string, lim []string, cost string, now int64) []any {
	var out []any
	for _, a := range scenario.OneCall(script, lim, cost, strconv.FormatInt(now, 10), "0") {
		out = append(out, a)
	}
	return out
}

// TestCallerClockBoundOnRealServers: a real server refuses a caller clock
// more than 60 s from its TIME (BADARG, nothing written) and takes one
// inside it. The margins (70 s out, 50 s in) leave 10 s for a loaded
// machine between reading TIME and the script running.
func TestCallerClockBoundOnRealServers(t *testing.T) {
	for _, target := range realTargets() {
		for script, lim := range smallLimits {
			t.Run(target.name+"/"+script, func(t *testing.T) {
				c := target.open(t)
				key := fmt.Sprintf("bound:{%s}:%d", script, time.Now().UnixNano())
				s := serverTime(t, c)
				for _, now := range []int64{s + 70e6, s - 70e6, 4503599627370496, 1} {
					_, err := evalReal(t, c, script, key, with(script, lim, "1", now)...)
					want := fmt.Sprintf("BADARG now must be 0 (the server's clock) or within 60000000 µs of the server's TIME, got '%d'", now)
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("now %d µs (TIME %d): got %v, want %q", now, s, err, want)
					}
					if n := c.(redis.Cmdable).Exists(context.Background(), key).Val(); n != 0 {
						t.Fatalf("now %d: a refused call created the key", now)
					}
				}
				for _, skew := range []int64{50e6, -50e6} {
					if _, err := evalReal(t, c, script, key+strconv.FormatInt(skew, 10), with(script, lim, "1", serverTime(t, c)+skew)...); err != nil {
						t.Fatalf("skew %d µs: %v", skew, err)
					}
				}
			})
		}
	}
}

// graceStates are, per script, state written 40 s before the server's
// clock S (as the script could have written it then) and the one limit the
// test uses: 2 a second.
var graceStates = map[string]func(key string, s int64) func(context.Context, redis.Cmdable) error{
	// '-<ts><tokens>': drained 40 s ago.
	"token_bucket": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			return c.Set(ctx, key, scenario.TokenBucketState(s-40e6, 0), 0).Err()
		}
	},
	// 'l<ts><unit>/<more>': 2 units of 1 s poured 40 s ago.
	"leaky_bucket": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			return c.Set(ctx, key, scenario.LeakyBucketState(s-40e6, 1000000, 2000000), 0).Err()
		}
	},
	// 'g<tat><interval>/<more>': a TAT 2 s ahead of a write 40 s ago.
	"gcra": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			return c.Set(ctx, key, scenario.GCRAState(s-38e6, 1000000, 2000000), 0).Err()
		}
	},
	// '1<t><n>': 2 calls, the newest 40 s ago (in ms).
	"fixed_window": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			return c.Set(ctx, key, scenario.FixedWindowState((s-40e6)/1000, 2), 0).Err()
		}
	},
	// 'c<s><d>/<cur>/<prev>': 2 calls at the start of a window 40 s ago.
	"sliding_window_counter": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			w := (s - 40e6) / 1e6 * 1e6
			return c.Set(ctx, key, scenario.SlidingWindowCounterState(w/1000, 0, 2, 0), 0).Err()
		}
	},
	"sliding_window_log": func(key string, s int64) func(context.Context, redis.Cmdable) error {
		return func(ctx context.Context, c redis.Cmdable) error {
			return c.ZAdd(ctx, key, redis.Z{Score: float64(s - 40e6), Member: scenario.LogMember(s-40e6, 1)}).Err()
		}
	},
}

// TestCallerClockGraceOnRealServers: a write with a caller clock keeps its
// key 60 s past the instant its state is spent by the server's clock, so a
// caller that lags the server finds the state it is judged against. A
// caller 30 s behind writes on a key whose state is older still; its state
// is spent about 29 s before the server's clock, so without the grace the
// key would go at once (PEXPIRE 1 ms), and a second call 20 ms later, just
// as late, would meet an empty key and be let through. With the grace the
// PTTL is about 31 s and the second call is denied.
func TestCallerClockGraceOnRealServers(t *testing.T) {
	for _, target := range realTargets() {
		for script, lim := range smallLimits {
			t.Run(target.name+"/"+script, func(t *testing.T) {
				c := target.open(t)
				ctx := context.Background()
				key := fmt.Sprintf("grace:{%s}:%d", script, time.Now().UnixNano())
				s := serverTime(t, c)
				if err := graceStates[script](key, s)(ctx, c.(redis.Cmdable)); err != nil {
					t.Fatal(err)
				}
				// On a whole second plus 1 µs, 30 s behind: the windows'
				// second call, 20 ms later, falls in the same window.
				own := (s-30e6)/1e6*1e6 + 1
				first, err := evalReal(t, c, script, key, with(script, lim, "1", own)...)
				if err != nil {
					t.Fatal(err)
				}
				if first[0] != 1 {
					t.Fatalf("first call %v: want an admit", first)
				}
				pttl := c.(redis.Cmdable).PTTL(ctx, key).Val().Milliseconds()
				// Spent at own + reset_after; kept 60 s past that on the
				// server's clock, which read s just before (5 s of slack for
				// a loaded machine: without the grace the PTTL is 1 ms).
				want := (own-s)/1000 + first[3] + 60000
				if pttl > want+1 || pttl < want-5000 {
					t.Fatalf("PTTL %d ms after a write 30 s late with reset_after %d ms, want about %d", pttl, first[3], want)
				}
				time.Sleep(20 * time.Millisecond)
				second, err := evalReal(t, c, script, key, with(script, lim, "2", own+20e3)...)
				if err != nil {
					t.Fatal(err)
				}
				if second[0] != 0 {
					t.Fatalf("a caller as late, 20 ms on, met no state: %v (first %v)", second, first)
				}
			})
		}
	}
}
