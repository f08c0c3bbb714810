package luatest

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// windowsTouched is the most windows of length w, aligned to the epoch, that
// a closed span of the given length can touch: [a, a+span] touches windows
// floor(a/w) .. floor((a+span)/w), at most ceil(span/w)+1 of them (a span of
// one µs already touches two when a is a window's last µs).
func windowsTouched(span, w time.Duration) int {
	s, wu := span.Microseconds(), w.Microseconds()
	return int((s+wu-1)/wu) + 1
}

func init() {
	fw := func(limit int, window time.Duration) func(int) []string {
		return func(cost int) []string { return scenario.Args(limit, window, cost) }
	}
	// Each call is counted in the window it is judged in, which is its own
	// window or (out of order) a later one that the run's clocks reached, so
	// the windows that count a run of calls all lie within the span's touched
	// windows, and each admits at most limit.
	perWindow := func(limit int, window time.Duration) func(time.Duration) int {
		return func(span time.Duration) int { return limit * windowsTouched(span, window) }
	}
	limiters = append(limiters,
		// 300 ms / 7 is not a whole number of µs.
		limiter{script: "fixed_window", name: "7 per 300ms", args: fw(7, 300*time.Millisecond),
			bound: perWindow(7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		limiter{script: "fixed_window", name: "3 per 1ms", args: fw(3, time.Millisecond),
			bound: perWindow(3, time.Millisecond), maxCost: 2, maxGap: 300 * time.Microsecond},
	)
}

// eachAlignedWindow runs in-order sequences on every row of script and
// wants at most limit admitted among the calls whose clock falls in one
// aligned window. (Out of order, a late call is counted in a later window
// than its clock names, so grouping by clock does not apply.)
func eachAlignedWindow(t *testing.T, script string) {
	src, err := Source(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limiters {
		if l.script != script {
			continue
		}
		limit, window := windowConfig(l)
		t.Run(l.name, func(t *testing.T) {
			for seed := int64(1); seed <= 20; seed++ {
				rng := rand.New(rand.NewSource(seed))
				r := New(scenario.T0)
				used := map[int64]int{}
				for _, c := range l.sequence(rng, 300, 0) {
					r.SetTime(c.at)
					l.run(t, r, src, &c)
					if !c.allowed {
						continue
					}
					k := c.at / window.Microseconds()
					used[k] += c.cost
					if used[k] > limit {
						t.Fatalf("seed %d: admitted %d in window %d, limit %d", seed, used[k], k, limit)
					}
				}
			}
		})
	}
}

// windowConfig reads limit and window back from a row's ARGV.
func windowConfig(l limiter) (int, time.Duration) {
	a := l.args(1)
	limit, err1 := strconv.Atoi(a[0])
	ms, err2 := strconv.Atoi(a[1])
	if err1 != nil || err2 != nil {
		panic("windowConfig: " + l.name)
	}
	return limit, time.Duration(ms) * time.Millisecond
}

func TestFixedWindowAlignedWindow(t *testing.T) {
	eachAlignedWindow(t, "fixed_window")
}

// windowStep runs one call of script on key k and checks the reply and the PTTL.
func windowStep(t *testing.T, r *Redis, src string, argv []string, want []any, pttl int64) {
	t.Helper()
	got, err := r.Eval(src, []string{"k"}, argv)
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%v at %d: reply (-want +got):\n%s", argv, r.Now(), diff)
	}
	if got := r.PTTL("k"); got != pttl {
		t.Fatalf("%v at %d: PTTL %d, want %d", argv, r.Now(), got, pttl)
	}
}

func windowReply(vals ...int64) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

// TestFixedWindowLaggingServerClock: the server's clock expires the key, so
// when it lags the caller's, the key lasts until the window ends by the
// server's clock; otherwise callers still inside the window would find the
// count gone and start it again. A caller's write keeps it 60 s more, for
// calls whose clocks lag the server's by up to 60 s.
func TestFixedWindowLaggingServerClock(t *testing.T) {
	src, err := Source("fixed_window")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	at := func(ms int64) string { return strconv.FormatInt(scenario.T0+ms*1000, 10) }
	// The caller is 600 ms ahead: 400 ms left for it, 1000 ms for the
	// server, plus the 60 s grace.
	windowStep(t, r, src, scenario.Args(2, 1000, 1, at(600), 0), windowReply(1, 1, 0, 400), 61000)
	r.SetTime(scenario.T0 + 700_000)
	// A caller 100 ms behind the first one still finds the count.
	windowStep(t, r, src, scenario.Args(2, 1000, 1, at(700), 0), windowReply(1, 0, 0, 300), 60300)
	windowStep(t, r, src, scenario.Args(2, 1000, 1, at(900), 0), windowReply(0, 0, 100, 100), 60300)
	// 60 s after the window ended the count is gone for every clock the
	// bound admits, and so is the key.
	r.SetTime(scenario.T0 + 61_000_000 - 1)
	windowStep(t, r, src, scenario.Args(2, 1000, 0, strconv.FormatInt(scenario.T0+999_999, 10), 0), windowReply(0, 0, 1, 1), 1)
	r.SetTime(scenario.T0 + 61_000_000)
	if r.PTTL("k") != -2 {
		t.Fatalf("the key outlived the 60 s grace: PTTL %d", r.PTTL("k"))
	}
}

// TestFixedWindowLargestNumbers: the longest window at the largest clock is
// still exact.
func TestFixedWindowLargestNumbers(t *testing.T) {
	src, err := Source("fixed_window")
	if err != nil {
		t.Fatal(err)
	}
	const now = 1 << 52 // 4503599627370496 µs, in window 45 of 1e14 µs
	r := New(now)
	// Window 45 ends at 4.6e15 µs, 96400372629504 µs after now.
	windowStep(t, r, src, scenario.Args(1000000000, 100000000000, 1000000000, 0, 0), windowReply(1, 0, 0, 96400372630), 96400372630)
	windowStep(t, r, src, scenario.Args(1000000000, 100000000000, 1, 0, 0), windowReply(0, 0, 96400372630, 96400372630), 96400372630)
	r.SetTime(4_600_000_000_000_000 - 1)
	windowStep(t, r, src, scenario.Args(1000000000, 100000000000, 1, 0, 0), windowReply(0, 0, 1, 1), 1)
	r.SetTime(4_600_000_000_000_000)
	windowStep(t, r, src, scenario.Args(1000000000, 100000000000, 1, 0, 0), windowReply(1, 999999999, 0, 100000000000), 100000000000)
}
