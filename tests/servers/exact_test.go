package servers

import (
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
	"github.com/redlimit/redlimit/tests/scenario"
	"github.com/redlimit/redlimit/tests/tier"
)

// content reads a key on a real server as luatest.(*Redis).Content does.
func content(t *testing.T, c redis.Cmdable, key string) string {
	t.Helper()
	ctx := context.Background()
	switch typ := c.Type(ctx, key).Val(); typ {
	case "none":
		return ""
	case "string":
		return "string " + c.Get(ctx, key).Val()
	case "hash":
		h := c.HGetAll(ctx, key).Val()
		parts := make([]string, 0, len(h))
		for f, v := range h {
			parts = append(parts, f+"="+v)
		}
		sort.Strings(parts)
		return "hash " + strings.Join(parts, " ")
	case "zset":
		var parts []string
		for _, z := range c.ZRangeWithScores(ctx, key, 0, -1).Val() {
			parts = append(parts, fmt.Sprint(z.Member)+"="+strconv.FormatFloat(z.Score, 'f', -1, 64))
		}
		sort.Strings(parts)
		return "zset " + strings.Join(parts, " ")
	default:
		return typ
	}
}

// differ sends each call to a real server and to the gopher-lua tier,
// which reads the server's TIME first, and wants the same reply and the
// same state; a PTTL is compared as tier.PTTLAgrees says.
type differ struct {
	t      *testing.T
	c      redis.Scripter
	script string
	src    string
	key    string
	ref    *luatest.Redis
}

func newDiffer(t *testing.T, c redis.Scripter, script, key string) *differ {
	t.Helper()
	src, err := luatest.Source(script)
	if err != nil {
		t.Fatal(err)
	}
	return &differ{t: t, c: c, script: script, src: src, key: key, ref: luatest.New(serverTime(t, c))}
}

func (d *differ) call(argv ...string) []any {
	t := d.t
	t.Helper()
	read := time.Now()
	d.ref.SetTime(max(d.ref.Now(), serverTime(t, d.c)))
	want, wantErr := d.ref.Eval(d.src, []string{d.key}, argv)
	args := make([]any, len(argv))
	for i, a := range argv {
		args[i] = a
	}
	got, err := redis.NewScript(d.src).Run(context.Background(), d.c, []string{d.key}, args...).Result()
	if !sameError(wantErr, err) {
		t.Fatalf("%s %v: gopher-lua says (%v, %v), the server (%v, %v)", d.script, argv, want, wantErr, got, err)
	}
	if err != nil {
		return nil
	}
	if diff := cmp.Diff(want, normalize(got)); diff != "" {
		t.Fatalf("%s %v: gopher-lua (-) vs the server (+):\n%s", d.script, argv, diff)
	}
	if w, g := d.ref.Content(d.key), content(t, d.c.(redis.Cmdable), d.key); w != g {
		t.Fatalf("%s %v: state (-gopher-lua +server):\n%s", d.script, argv, cmp.Diff(w, g))
	}
	wp, gp := d.ref.PTTL(d.key), d.c.(redis.Cmdable).PTTL(context.Background(), d.key).Val().Milliseconds()
	if wp > 0 && !tier.PTTLAgrees(gp, wp, read) {
		t.Fatalf("%s %v: PTTL %d ms, gopher-lua's %d", d.script, argv, gp, wp)
	}
	return got.([]any)
}

// TestRealServersAreExact runs the inputs that break doubles on a real
// server and wants every reply and every stored state to equal the
// gopher-lua tier's (which tests/lua holds to big-integer models): the
// largest limits, rates that do not divide their periods, day-long
// periods, callers early and late, limits that change, refunds and charges
// (every script that settles); and the token bucket's credit instants that a product's last
// digit decides, 1 µs before and at them.
func TestRealServersAreExact(t *testing.T) {
	c := standalone(t, 3)
	ctx := context.Background()
	large := []int64{1_000_000_000, 999_999_999, 999_999_937, 10_000_000, 9_999_999, 7}
	periods := []int64{100_000_000_000, 99_999_999_989, 86_400_000, 1000, 7}
	s := func(v int64) string { return strconv.FormatInt(v, 10) }
	limits := map[string][][]string{}
	for i, a := range large {
		b, p := large[(i+2)%len(large)], periods[i%len(periods)]
		limits["token_bucket"] = append(limits["token_bucket"], []string{s(a), s(b), s(p), "smooth"}, []string{s(a), s(b), s(p), "interval"})
		if a*((p*1000+b-1)/b) <= 1e15 && b <= p*1000 {
			limits["leaky_bucket"] = append(limits["leaky_bucket"], []string{s(a), s(b), s(p)})
			limits["gcra"] = append(limits["gcra"], []string{s(a), s(b), s(p), "all"}, []string{s(a), s(b), s(p), "at_most"})
		}
		limits["fixed_window"] = append(limits["fixed_window"], []string{s(a), s(p)})
		limits["sliding_window_counter"] = append(limits["sliding_window_counter"], []string{s(a), s(p)})
		limits["sliding_window_log"] = append(limits["sliding_window_log"], []string{s(min(a, 50)), s(p)})
	}
	limits["leaky_bucket"] = append(limits["leaky_bucket"], []string{"9", "999999937", "100000000000"}, []string{"1000", "1000", "86400000"})
	limits["gcra"] = append(limits["gcra"], []string{"9", "999999937", "100000000000", "all"}, []string{"1000", "1000", "86400000", "all"})
	rng := rand.New(rand.NewSource(1))
	calls := 0
	for script, lims := range limits {
		for i, lim := range lims {
			d := newDiffer(t, c, script, fmt.Sprintf("exact:{%s}:%d:%d", script, i, time.Now().UnixNano()))
			// 10 s ahead of the server, then up to 30 s more, now and then
			// a caller up to 5 s behind the newest: never behind the
			// server, where a call on an empty key would be judged at the
			// server's clock, which the gopher-lua tier only reads near.
			at := serverTime(t, c) + 10e6
			most, _ := strconv.ParseInt(lim[0], 10, 64)
			prev := []int64{at} // the clocks sent so far
			for j := 0; j < 10; j++ {
				at += rng.Int63n(3e6)
				now := at
				if rng.Intn(4) == 0 {
					now -= rng.Int63n(5e6)
				}
				cost := []int64{0, most, 1 + rng.Int63n(max(1, most/3)), rng.Int63n(most + 2)}[rng.Intn(4)]
				argv := scenario.OneCall(script, lim, s(cost), s(now), "0")
				if rng.Intn(8) == 0 {
					other := lims[rng.Intn(len(lims))] // the limit changes
					argv = scenario.OneCall(script, other, s(cost), s(now), "0")
				}
				if script == "gcra" && rng.Intn(4) == 0 {
					// A reservation settled: a refund, or a charge into debt.
					argv[4] = []string{"refund", "charge"}[rng.Intn(2)]
				}
				if script == "token_bucket" && rng.Intn(4) == 0 {
					argv[4] += []string{"_refund", "_charge"}[rng.Intn(2)]
				}
				if (script == "leaky_bucket" || script == "sliding_window_counter" || script == "sliding_window_log") && rng.Intn(3) == 0 {
					// A reservation settled after the deadline; the windows'
					// at is an instant counted before (the log's members
					// are there), or one a window or more back.
					argv = append(argv, []string{"refund", "charge"}[rng.Intn(2)])
					if script != "leaky_bucket" {
						held := prev[rng.Intn(len(prev))]
						if rng.Intn(4) == 0 {
							held = now - rng.Int63n(3e6)
						}
						argv = append(argv, s(held))
					}
				}
				prev = append(prev, now)
				d.call(argv...)
				calls++
			}
		}
	}
	// The credit edges: a bucket drained credit-d µs before the call, with d
	// 1 (one token short) and 0.
	for _, lim := range limits["token_bucket"] {
		if lim[3] != "smooth" {
			continue
		}
		capacity, _ := strconv.ParseInt(lim[0], 10, 64)
		rate, _ := strconv.ParseInt(lim[1], 10, 64)
		period, _ := strconv.ParseInt(lim[2], 10, 64)
		p := period * 1000
		if fill := new(big.Int).Mul(big.NewInt(capacity), big.NewInt(p)); fill.Quo(fill, big.NewInt(rate)).Cmp(big.NewInt(1e15)) > 0 {
			continue // refused: the bucket would take over 31 years to fill
		}
		ks := luatest.Edges(p, rate, capacity)
		for i, k := range ks[:min(len(ks), 4)] {
			// ceil(k*p/rate), exactly: k*p may pass 2^63.
			q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(k), big.NewInt(p)), big.NewInt(rate), new(big.Int))
			if r.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
			credit := q.Int64()
			for _, back := range []int64{1, 0} {
				key := fmt.Sprintf("edge:{tb}:%d:%d:%d", i, back, time.Now().UnixNano())
				d := newDiffer(t, c, "token_bucket", key)
				now := serverTime(t, c) + 5e6
				// token_bucket's state '-<ts><tokens>': drained (0 tokens) at ts.
				state := scenario.TokenBucketState(now-credit+back, 0)
				if err := c.Set(ctx, key, state, time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
				// The same key in gopher-lua, made no sooner than the real
				// one, so its TTL is never the shorter.
				d.ref.SetTime(serverTime(t, c))
				d.ref.Put(scenario.Preset{Key: key, Type: "string", Vals: []string{state}, TTL: 3600000})
				got := d.call(scenario.OneCall("token_bucket", lim, s(k), s(now), "0")...)
				// One µs short, fewer than k tokens are there and the call
				// waits 1 µs (1 ms); on time, k are taken. The tokens there
				// after e µs are floor(e*rate/period), exactly.
				added := func(e int64) int64 {
					x := new(big.Int).Mul(big.NewInt(e), big.NewInt(rate))
					return x.Quo(x, big.NewInt(p)).Int64()
				}
				want := []any{int64(0), added(credit - 1), int64(1)}
				if back == 0 {
					want = []any{int64(1), added(credit) - k, int64(0)}
				}
				if got == nil || !cmp.Equal(want, got[:3]) {
					t.Fatalf("%v: %d tokens %d µs after a drain, the k-th due at %d µs: %v, want %v...", lim, k, credit-back, credit, got, want)
				}
				calls++
			}
		}
	}
	t.Logf("%d calls, each the same on the server and in gopher-lua", calls)
}
