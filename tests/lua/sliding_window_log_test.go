package luatest

import (
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// perWindow bounds an exact rolling window: a closed span of span+1 µs is
// covered by ceil((span+1)/window) half-open windows (t-window, t], and each
// holds at most limit. Spans shorter than the window get limit; a span of
// exactly the window can hold two full windows (members at both ends).
func perWindow(limit int, window time.Duration) func(time.Duration) int {
	w := window.Microseconds()
	return func(span time.Duration) int {
		return limit * int((span.Microseconds()+w)/w)
	}
}

func init() {
	swl := func(limit int, window time.Duration) func(int) []string {
		return func(cost int) []string { return scenario.Args(limit, window, cost) }
	}
	limiters = append(limiters,
		limiter{script: "sliding_window_log", name: "5 per 1s", args: swl(5, time.Second),
			bound: perWindow(5, time.Second), maxCost: 3, maxGap: 150 * time.Millisecond},
		limiter{script: "sliding_window_log", name: "7 per 300ms", args: swl(7, 300*time.Millisecond),
			bound: perWindow(7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		limiter{script: "sliding_window_log", name: "3 per 1ms", args: swl(3, time.Millisecond),
			bound: perWindow(3, time.Millisecond), maxCost: 2, maxGap: 300 * time.Microsecond},
	)
}

// zcard is the number of members in the log, expired ones included.
func zcard(t *testing.T, r *Redis, key string) int {
	t.Helper()
	got, err := r.Eval("return redis.call('ZCARD', KEYS[1])", []string{key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return int(got.(int64))
}

// TestSlidingWindowLogMemoryIsBounded admits many calls, in and out of
// order and many in one µs, and wants the set never to hold more than
// limit members; right after an admit it holds exactly the live ones.
func TestSlidingWindowLogMemoryIsBounded(t *testing.T) {
	src, err := Source("sliding_window_log")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit   int
		window  time.Duration
		maxCost int
		maxGap  time.Duration
	}{
		{10, time.Second, 4, 50 * time.Millisecond},
		{50, 20 * time.Millisecond, 30, 2 * time.Millisecond},
		{3, time.Millisecond, 3, 200 * time.Microsecond},
	} {
		rng := rand.New(rand.NewSource(1))
		r := New(scenario.T0)
		at, admits := int64(scenario.T0), 0
		for i := 0; i < 2000; i++ {
			at += rng.Int63n(tc.maxGap.Microseconds() + 1)
			if rng.Intn(4) == 0 {
				at -= rng.Int63n(tc.maxGap.Microseconds() + 1) // a late caller
			}
			r.SetTime(max(r.Now(), at))
			argv := scenario.Args(tc.limit, tc.window, rng.Intn(tc.maxCost+1), at, 0)
			reply, err := r.Eval(src, []string{"log"}, argv)
			if err != nil {
				t.Fatal(err)
			}
			got := reply.([]any)
			n := zcard(t, r, "log")
			if n > tc.limit {
				t.Fatalf("%v: the log holds %d members, limit %d", argv, n, tc.limit)
			}
			if got[0] == int64(1) && argv[2] != "0" {
				admits++
				if live := tc.limit - int(got[1].(int64)); n != live {
					t.Fatalf("%v: after an admit the log holds %d members, %d live", argv, n, live)
				}
			}
		}
		if admits < 100 {
			t.Fatalf("limit %d: only %d admits, the test proves little", tc.limit, admits)
		}
	}
}

// TestSlidingWindowLogLargeCosts admits the largest cost there is in one
// call: every unit is a distinct member, and ZADD gets them in chunks that
// stay clear of Lua 5.1's unpack limit (about 8000 values).
func TestSlidingWindowLogLargeCosts(t *testing.T) {
	src, err := Source("sliding_window_log")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	for i, st := range []struct {
		cost int
		want []any
	}{
		{9999, []any{int64(1), int64(1), int64(0), int64(1000)}},
		{1, []any{int64(1), int64(0), int64(0), int64(1000)}},
		{1, []any{int64(0), int64(0), int64(1000), int64(1000)}},
	} {
		got, err := r.Eval(src, []string{"log"}, scenario.Args(10000, time.Second, st.cost, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Fatalf("step %d: reply (-want +got):\n%s", i, diff)
		}
		if i == 0 {
			for _, c := range r.Commands() {
				if f := strings.Fields(c); f[0] == "ZADD" && len(f) > 2+2000 {
					t.Fatalf("ZADD with %d values: unpack in Redis's Lua fails near 8000", len(f)-2)
				}
			}
		}
	}
	if n := zcard(t, r, "log"); n != 10000 {
		t.Fatalf("ZCARD = %d, want 10000 distinct members", n)
	}
	// One second later all 10000 leave together and make room again.
	r.SetTime(scenario.T0 + 1000000)
	got, err := r.Eval(src, []string{"log"}, scenario.Args(10000, time.Second, 10000, 0, 0))
	if err != nil || got.([]any)[0] != int64(1) {
		t.Fatalf("got (%v, %v), want an admit", got, err)
	}
	if n := zcard(t, r, "log"); n != 10000 {
		t.Fatalf("ZCARD = %d, want 10000", n)
	}
}

// TestSlidingWindowLogMatchesModel compares every reply with a plain list of
// admitted times, where waits are found by searching rather than computed,
// with callers out of order: a late caller is judged at the newest member's
// time (on an empty key, at the server's clock when it lags that), and its
// waits count from its own clock.
func TestSlidingWindowLogMatchesModel(t *testing.T) {
	src, err := Source("sliding_window_log")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limiters {
		if l.script != "sliding_window_log" {
			continue
		}
		limit, _ := strconv.Atoi(l.args(0)[0])
		windowMs, _ := strconv.ParseInt(l.args(0)[1], 10, 64)
		w := windowMs * 1000
		for seed := int64(1); seed <= 5; seed++ {
			rng := rand.New(rand.NewSource(seed))
			r := New(scenario.T0)
			var log []int64      // admitted unit times, in order
			expireAt := int64(0) // when the server drops the key
			// live counts the members that are live at now.
			live := func(now int64) int {
				return len(log) - sort.Search(len(log), func(i int) bool { return log[i] > now-w })
			}
			latest := int64(0)
			for _, c := range l.sequence(rng, 300, l.maxGap) {
				// The server's clock lags the latest caller clock, so
				// callers often run ahead of it.
				latest = max(latest, c.at)
				r.SetTime(max(r.Now(), latest-l.maxGap.Microseconds()))
				if r.Now() >= expireAt {
					log = nil
				}
				now := c.at
				if n := len(log); n > 0 && now < log[n-1] {
					now = log[n-1]
				} else if n == 0 {
					now = max(now, r.Now()) // an empty key: the later clock
				}
				// waitMs is the least whole ms after the caller's own clock
				// at which ok holds, judged no earlier than now.
				waitMs := func(ok func(int64) bool) int64 {
					return int64(sort.Search(int(windowMs+now/1000-c.at/1000)+2, func(m int) bool {
						return ok(max(now, c.at+int64(m)*1000))
					}))
				}
				want := max(c.cost, 1)
				n := live(now)
				allowed := want <= limit && n+want <= limit
				retry := int64(0)
				switch {
				case want > limit:
					retry = -1
				case !allowed:
					retry = waitMs(func(t int64) bool { return live(t)+want <= limit })
				}
				remaining := limit - live(now)
				reset := int64(0)
				if live(now) > 0 {
					reset = waitMs(func(t int64) bool { return live(t) == 0 })
				}
				if allowed && c.cost > 0 {
					for i := 0; i < c.cost; i++ {
						log = append(log, now)
					}
					remaining -= c.cost
					reset = waitMs(func(t int64) bool { return live(t) == 0 })
					// The key outlives the newest member by the server's
					// clock, and 60 s more for a caller clock, in whole ms.
					expireAt = r.Now() + (now+w-r.Now()+maxSkew+999)/1000*1000
				}
				got, err := r.Eval(src, []string{"k"}, append(l.args(c.cost), strconv.FormatInt(c.at, 10), "0"))
				if err != nil {
					t.Fatal(err)
				}
				a := int64(0)
				if allowed {
					a = 1
				}
				if diff := cmp.Diff([]any{a, int64(remaining), retry, reset}, got); diff != "" {
					t.Fatalf("%s seed %d: cost %d at %d: reply (-model +script):\n%s", l.name, seed, c.cost, c.at, diff)
				}
			}
		}
	}
}
