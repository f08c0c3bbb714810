package luatest

import (
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// gcraInterval is T' in µs, period/rate rounded up, as gcra.lua computes it.
func gcraInterval(rate int, period time.Duration) int64 {
	return (period.Microseconds() + int64(rate) - 1) / int64(rate)
}

// gcraBound: a call of cost c passes only while TAT - now <= (burst - c)*T',
// and every admitted cost pushes the TAT by c*T' from at least the clock of
// the first call of a span, so the costs admitted from clock t0 to clock t1
// add up to at most burst + (t1 - t0)/T'. A burst at t0 and then one call
// per T' reaches it, so it is tight; since T' >= period/rate it is never
// above burst + rate*span/period.
func gcraBound(burst, rate int, period time.Duration) func(time.Duration) int {
	t := gcraInterval(rate, period)
	return func(span time.Duration) int { return burst + int(span.Microseconds()/t) }
}

// gcraStateRE is gcra.lua's long state, 'g<tat><interval>/<more>' in µs:
// the tag, the TAT as exactly 16 digits, then two numbers without leading
// zeros (the lead less one interval); gcraShortRE its short one,
// '2<tat mod 1e10><interval>' in 10 and 8 digits.
var (
	gcraStateRE = regexp.MustCompile(`^g([0-9]{16})([1-9][0-9]*)/(0|[1-9][0-9]*)$`)
	gcraShortRE = regexp.MustCompile(`^2([0-9]{10})([0-9]{8})$`)
	// The settled form, which only take refund and take charge write.
	gcraSettledRE = regexp.MustCompile(`^g([0-9]{16})([1-9][0-9]*)=(0|[1-9][0-9]*)\+(0|[1-9][0-9]*)$`)
)

// parseGCRA is scenario.ParseGCRA.
var parseGCRA = scenario.ParseGCRA

func gcraArgs(burst, rate int, period time.Duration) func(int) []string {
	return func(cost int) []string { return scenario.Args(burst, rate, period, "all", cost) }
}

func init() {
	limiters = append(limiters,
		limiter{script: "gcra", name: "5 per 1s burst 5", args: gcraArgs(5, 5, time.Second),
			bound: gcraBound(5, 5, time.Second), maxCost: 3, maxGap: 150 * time.Millisecond},
		// T = 42857.14 µs, rounded up to 42858.
		limiter{script: "gcra", name: "7 per 300ms burst 10", args: gcraArgs(10, 7, 300*time.Millisecond),
			bound: gcraBound(10, 7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		// Sub-ms: T = 333.33 µs, rounded up to 334.
		limiter{script: "gcra", name: "3 per 1ms burst 4", args: gcraArgs(4, 3, time.Millisecond),
			bound: gcraBound(4, 3, time.Millisecond), maxCost: 3, maxGap: 400 * time.Microsecond},
	)
}

func evalReply(t *testing.T, r *Redis, src string, keys, argv []string) []any {
	t.Helper()
	got, err := r.Eval(src, keys, argv)
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return got.([]any)
}

// TestGCRAMatchesLeakyBucket: GCRA's virtual scheduling and the
// continuous-state leaky bucket are the same algorithm (ITU-T I.371), and
// both scripts round the interval up to a whole µs, so with calls in order
// they must give the same replies and the same TTLs. (Out of order they
// differ on purpose: the leaky bucket judges a late call at its last pour,
// GCRA at the call's own clock.)
func TestGCRAMatchesLeakyBucket(t *testing.T) {
	gcra, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Source("leaky_bucket")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limiters {
		if l.script != "gcra" {
			continue
		}
		t.Run(l.name, func(t *testing.T) {
			for seed := int64(1); seed <= 10; seed++ {
				rng := rand.New(rand.NewSource(seed))
				a, b := New(scenario.T0), New(scenario.T0)
				for i, c := range l.sequence(rng, 200, 0) {
					a.SetTime(c.at)
					b.SetTime(c.at)
					g := l.args(c.cost)
					argv := withClock("gcra", g, strconv.FormatInt(c.at, 10), "0")
					lbArgv := withClock("leaky_bucket", append(g[:3:3], g[4]), strconv.FormatInt(c.at, 10), "0")
					ga, gb := evalReply(t, a, gcra, []string{"k"}, argv), evalReply(t, b, lb, []string{"k"}, lbArgv)
					if diff := cmp.Diff(gb, ga); diff != "" {
						t.Fatalf("seed %d call %d %v: leaky_bucket (-) vs gcra (+):\n%s", seed, i, argv, diff)
					}
					if pa, pb := a.PTTL("k"), b.PTTL("k"); pa != pb {
						t.Fatalf("seed %d call %d %v: PTTL %d, leaky_bucket's %d", seed, i, argv, pa, pb)
					}
				}
			}
		})
	}
}

// TestGCRALateCallsGainNothing: a call whose clock lags the newest one seen
// is judged at its own clock against a TAT that never moves back, so it is
// never allowed where the same call at the newest clock would be denied,
// and the stored TAT never decreases.
func TestGCRALateCallsGainNothing(t *testing.T) {
	eachLimiter(t, func(t *testing.T, l limiter, src string, rng *rand.Rand) {
		if l.script != "gcra" {
			return
		}
		r := New(scenario.T0)
		latest, lastTAT := int64(0), int64(0)
		for _, c := range l.sequence(rng, 200, l.maxGap*3) {
			latest = max(latest, c.at)
			r.SetTime(latest)
			if r.get("k") == nil {
				// Expired by the server's clock: a caller that lags it may
				// start a new TAT behind the old one (the README's caveat).
				lastTAT = 0
			}
			onTime := call{at: latest, cost: c.cost}
			l.run(t, r.Clone(), src, &onTime)
			l.run(t, r, src, &c)
			if c.allowed && !onTime.allowed {
				t.Fatalf("cost %d allowed at %d but denied at the newest clock %d", c.cost, c.at, latest)
			}
			if v := r.get("k"); v != nil {
				tat, _, _, err := parseGCRA(v.str, r.Now())
				if err != nil || tat < lastTAT {
					t.Fatalf("TAT %q after %d (%v)", v.str, lastTAT, err)
				}
				lastTAT = tat
			}
		}
	})
}

// TestGCRAReachesItsBound: a caller that comes exactly at every T' after a
// full burst gets every call through, so the bound used above is tight and
// the rounded interval is the whole cost of rounding.
func TestGCRAReachesItsBound(t *testing.T) {
	src, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		burst, rate int
		period      time.Duration
	}{{5, 5, time.Second}, {10, 7, 300 * time.Millisecond}, {4, 3, time.Millisecond}} {
		r := New(scenario.T0)
		T := gcraInterval(tc.rate, tc.period)
		args := gcraArgs(tc.burst, tc.rate, tc.period)
		for k := int64(0); k <= 200; k++ {
			at := int64(scenario.T0) + k*T
			r.SetTime(at)
			cost := 1
			if k == 0 {
				cost = tc.burst
			}
			got := evalReply(t, r, src, []string{"k"}, withClock("gcra", args(cost), strconv.FormatInt(at, 10), "0"))
			if got[0] != int64(1) {
				t.Fatalf("%+v: call %d at +%d µs denied: %v", tc, k, k*T, got)
			}
			// One µs earlier the next call would have been denied.
			early := evalReply(t, r.Clone(), src, []string{"k"}, withClock("gcra", args(1), strconv.FormatInt(at+T-1, 10), "0"))
			if early[0] != int64(0) {
				t.Fatalf("%+v: a call 1 µs before the next interval passed: %v", tc, early)
			}
		}
	}
}

// TestGCRAKeyTrouble: a key of another Redis type is GET's WRONGTYPE, and a
// missing key argument is BADARG; neither changes anything.
func TestGCRAKeyTrouble(t *testing.T) {
	src, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	if _, err := r.Eval("redis.call('HSET', KEYS[1], 'tat', '1') return 1", []string{"k"}, nil); err != nil {
		t.Fatal(err)
	}
	argv := withClock("gcra", gcraArgs(5, 1, time.Second)(1), "0", "0")
	// Two requests, for a call of two keys: every key is read before any
	// is written, so the fresh key before the hash gets nothing either.
	two := append(append([]string(nil), argv...), argv[len(argv)-2:]...)
	for _, tc := range []struct {
		keys []string
		argv []string
		want string
	}{
		{[]string{"k"}, argv, "WRONGTYPE"},
		{nil, argv, "BADARG takes 1 to 64 keys, got 0"},
		{[]string{"fresh", "k"}, two, "WRONGTYPE"},
		{[]string{"fresh", "other"}, argv, "BADARG takes 2 to 64 keys and 5 arguments, then one request of 2 (cost, deadline) per key, got 2 and 7"},
		{[]string{"fresh", "fresh"}, two, "BADARG keys 1 and 2 are the same key"},
	} {
		before := r.Snapshot()
		got, err := r.Eval(src, tc.keys, tc.argv)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("keys %v: got (%v, %v), want an error starting %q", tc.keys, got, err, tc.want)
		}
		if after := r.Snapshot(); !before.Equal(after) {
			t.Errorf("keys %v changed state:\n%s\n%s", tc.keys, before, after)
		}
		for _, c := range r.Commands() {
			if writes[strings.ToUpper(strings.Fields(c)[0])] {
				t.Errorf("keys %v sent %q", tc.keys, c)
			}
		}
	}
}

// TestGCRAKeyTTL: with the server's clock a write's PTTL is reset_after.
// With a caller clock it is the time to the TAT by the server's clock, plus
// the 60 s a caller clock may lag the server's, so calls that reach Redis
// late, or whose clock runs behind the writer's, still find the TAT. A
// caller that lags the server on an empty key is judged at the server's
// clock (an expired key must not hand it the same time again); on a key
// with a TAT it is judged at its own clock against it.
func TestGCRAKeyTTL(t *testing.T) {
	src, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	at := func(d int64) string { return strconv.FormatInt(scenario.T0+d, 10) }
	for _, tc := range []struct {
		first    bool // a write with the server's clock comes first
		now      string
		want     []int64
		wantPTTL int64
	}{
		{false, "0", []int64{1, 9, 0, 1000}, 1000},
		{false, at(0), []int64{1, 9, 0, 1000}, 61000},
		// TAT = caller + 1 s = server + 6 s, plus 60 s.
		{false, at(5e6), []int64{1, 9, 0, 1000}, 66000},
		// Empty key, caller 3 s behind: TAT = server + 1 s, 4 s after its
		// own clock.
		{false, at(-3e6), []int64{1, 9, 0, 4000}, 61000},
		{false, at(-60e6), []int64{1, 9, 0, 61000}, 61000},
		// After a write at T0 (TAT T0 + 1 s): a caller 3 s behind is judged
		// at its own clock against the TAT, which moves to T0 + 2 s, 5 s
		// ahead of it: 5 more fit.
		{true, at(-3e6), []int64{1, 5, 0, 5000}, 62000},
	} {
		r := New(scenario.T0)
		args := gcraArgs(10, 1, time.Second)
		if tc.first {
			evalReply(t, r, src, []string{"k"}, withClock("gcra", args(1), "0", "0"))
		}
		got := evalReply(t, r, src, []string{"k"}, withClock("gcra", args(1), tc.now, "0"))
		want := make([]any, len(tc.want))
		for i, v := range tc.want {
			want[i] = v
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("now %s: reply (-want +got):\n%s", tc.now, diff)
		}
		if p := r.PTTL("k"); p != tc.wantPTTL {
			t.Errorf("now %s: PTTL %d, want %d", tc.now, p, tc.wantPTTL)
		}
	}
}
