package luatest

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redlimit/redlimit/tests/scenario"
)

// gcra.lua must agree with redis-cell's CL.THROTTLE and go-redis/redis_rate
// on every sequence where their meanings coincide. These tests run the same
// calls through gcra.lua and through the reference models in
// peers_rediscell_test.go and peers_redisrate_test.go, and compare every
// reply field of every call, plus the stored TAT after it.
//
// Where the meanings coincide:
//   - burst: our burst is redis_rate's Burst and redis-cell's max_burst + 1
//     (CL.THROTTLE replies it as "limit"). All three let exactly burst
//     requests through at once and then one per emission interval T.
//   - T: we round period/rate up to a whole µs (T'). When period/rate is a
//     whole number of µs the peers are run with the caller's own rate and
//     period (CL.THROTTLE when the period is whole seconds, redis-cell's
//     RateLimiter with Rate{period: T} otherwise, since the command takes
//     only seconds). When it is not, the peers would run at the exact T
//     (redis_rate) or T truncated to ns (redis-cell), and the schedules
//     drift apart by a fraction of a µs per request; so there the peers are
//     run at T' itself (redis_rate's Limit{Rate: 1, Period: T'} and
//     redis-cell's Rate{period: T'}), which is exactly what we promise.
//   - Clocks: both peers read the server's clock, so calls are in order and
//     the caller clock we send equals the server clock.
//
// How each field is compared (d0/d1: how far our TAT runs ahead of now
// before/after the call, read from our key, in exact µs; c = max(cost, 1)):
//   - allowed: ours 1/0; redis-cell's first element is "limited", the
//     opposite; redis_rate's Allowed is the cost it let through. A peek
//     (cost 0) answers for a cost of 1 in gcra.lua, while both peers answer
//     a quantity of 0 as "nothing to deny"; so our peek's allowed and
//     retry_after are compared with each peer's cost-1 answer on a copy of
//     its state (a cost-1 call would write), and its remaining and
//     reset_after with the peer's own cost-0 call.
//   - remaining: the same meaning in all three (whole requests that would
//     still pass now), compared as integers, except that redis_rate replies 0
//     whenever it denies; there the script's own diff (now - allow_at) is
//     compared instead, which holds the same information (remaining =
//     floor(diff/T) + c).
//   - retry_after: ours is ms, rounded up from an exact µs wait that we
//     recompute from our TAT and check against our reply. redis-cell keeps
//     the wait in ns, compared exactly, and replies whole seconds through
//     cellSeconds (rounded up only when a whole ms is left over), compared
//     with cellSeconds of our exact wait. redis_rate replies float seconds,
//     compared after rounding to the nearest µs. Where we answer 0
//     (allowed), both peers answer -1; where cost exceeds burst we answer -1
//     and so does redis-cell, while redis_rate answers a wait after which the
//     call would still be denied: d0 + (c - burst)*T, which is checked.
//   - reset_after: the same meaning in all three (until the TAT is reached);
//     compared like retry_after, with redis-cell's ttl in exact ns.
//   - state: both peers' TAT (a TAT behind now counts as now) must equal
//     ours, exactly for redis-cell (ns) and to the nearest µs for redis_rate.
//
// redis_rate computes in float seconds since 2017-01-01 (about 2.8e8 s,
// where a double's step is 0.06 µs), so two things can differ, and each is
// counted, logged and checked to be exactly this:
//   - "float boundary": a call exactly on the boundary (diff is 0 in exact
//     µs) that redis_rate's doubles put a hair below 0 and deny. We admit it,
//     as its algorithm does in exact arithmetic; its TAT is then set to ours.
//   - "float remaining": its remaining truncates diff/T, and when that
//     quotient is a whole number the double can land just below it (0.3/0.1
//     is 2.9999999999999996), so it replies one less.
// After each call redis_rate's TAT is set to ours (it already agrees to the
// nearest µs), so float error cannot pile up across a sequence.

type peerCase struct {
	name   string
	burst  int
	rate   int
	period time.Duration
}

// interval is T' in µs: period/rate rounded up, as gcra.lua computes it.
func (c peerCase) interval() int64 {
	p := c.period.Microseconds()
	return (p + int64(c.rate) - 1) / int64(c.rate)
}

func (c peerCase) wholeUs() bool { return c.period.Microseconds()%int64(c.rate) == 0 }

func (c peerCase) cellModel() *cellModel {
	if c.wholeUs() && c.period%time.Second == 0 {
		return newCellThrottle(int64(c.burst-1), int64(c.rate), int64(c.period/time.Second))
	}
	return newCellLimiter(int64(c.burst-1), c.interval()*1000)
}

func (c peerCase) rateModel() *rateModel {
	if c.wholeUs() {
		return newRateModel(c.burst, c.rate, c.period)
	}
	return newRateModel(c.burst, 1, time.Duration(c.interval())*time.Microsecond)
}

// peerRun holds gcra.lua's server and both models for one sequence.
type peerRun struct {
	t     *testing.T
	c     peerCase
	src   string
	r     *Redis
	cell  *cellModel
	rr    *rateModel
	calls int
	// explained counts the differences that the header comment explains.
	explained map[string]int
}

func newPeerRun(t *testing.T, c peerCase) *peerRun {
	t.Helper()
	src, err := Source("gcra")
	if err != nil {
		t.Fatal(err)
	}
	p := &peerRun{t: t, c: c, src: src, r: New(scenario.T0), cell: c.cellModel(), rr: c.rateModel(), explained: map[string]int{}}
	// The meanings coincide only if the peers run at our T'.
	if p.cell.interval != c.interval()*1000 || p.cell.limit != int64(c.burst) {
		t.Fatalf("%s: redis-cell runs at T = %d ns, limit %d; want %d µs, %d", c.name, p.cell.interval, p.cell.limit, c.interval(), c.burst)
	}
	if e := p.rr.period / p.rr.rate * 1e6; math.Abs(e-float64(c.interval())) > 1e-6 {
		t.Fatalf("%s: redis_rate runs at T = %v µs, want %d", c.name, e, c.interval())
	}
	return p
}

// tat is our TAT in µs as the script sees it at now: a missing key or a TAT
// behind now counts as now.
func (p *peerRun) tat(now int64) int64 {
	v := p.r.get("k")
	if v == nil {
		return now
	}
	n, interval, _, err := parseGCRA(v.str, p.r.Now())
	if err == nil && interval != p.c.interval() {
		err = fmt.Errorf("interval %d, want %d", interval, p.c.interval())
	}
	if err != nil {
		p.t.Fatalf("stored TAT %q: %v", v.str, err)
	}
	return max(n, now)
}

func ceilMs(us int64) int64 {
	if us < 0 {
		return -((-us) / 1000)
	}
	return (us + 999) / 1000
}

// roundUs is a Duration from redis_rate to the nearest µs.
func roundUs(d time.Duration) int64 { return int64(math.Round(float64(d) / 1e3)) }

// step runs one call at now (µs) through all three and compares them. It
// returns our reply.
func (p *peerRun) step(now int64, cost int) [4]int64 {
	t, c := p.t, p.c
	t.Helper()
	p.calls++
	B, T := int64(c.burst), c.interval()
	want := int64(max(cost, 1))

	p.r.SetTime(now)
	d0 := p.tat(now) - now
	reply, err := p.r.Eval(p.src, []string{"k"}, oneCall("gcra", scenario.Args(c.burst, c.rate, c.period, "all"), strconv.Itoa(cost), strconv.FormatInt(now, 10), "0"))
	if err != nil {
		t.Fatalf("%s call %d: %v", c.name, p.calls, err)
	}
	var got [4]int64
	for i, v := range reply.([]any) {
		got[i] = v.(int64)
	}
	d1 := p.tat(now) - now
	at := func() string {
		return c.name + " call " + strconv.Itoa(p.calls) + " at +" + time.Duration((now-scenario.T0)*1000).String() + " cost " + strconv.Itoa(cost)
	}

	// Our exact waits in µs, recomputed from our TAT by the definition, and
	// checked against our reply: these are what the peers are compared with.
	retryUs := int64(-1)
	if want <= B {
		retryUs = max(0, d0-(B-want)*T)
	}
	allowed := retryUs == 0
	retryMs := int64(-1) // never
	if retryUs >= 0 {
		retryMs = ceilMs(retryUs)
	}
	if wantReply := [4]int64{b2i(allowed), max(0, B-ceilDiv(d1, T)), retryMs, ceilMs(d1)}; got != wantReply {
		t.Fatalf("%s: gcra.lua replied %v, its definition says %v (d0 %d µs, d1 %d µs)", at(), got, wantReply, d0, d1)
	}

	p.compareCell(at, now, cost, got, d0, d1, retryUs)
	p.compareRate(at, now, cost, got, d0, d1, retryUs)
	return got
}

func (p *peerRun) compareCell(at func() string, now int64, cost int, got [4]int64, d0, d1, retryUs int64) {
	t, B := p.t, int64(p.c.burst)
	t.Helper()
	ns := now * 1000
	var res, res1 cellResult
	if cost == 0 {
		res1 = p.cell.clone().rateLimit(ns, 1)
		res = p.cell.rateLimit(ns, 0)
	} else {
		res = p.cell.rateLimit(ns, int64(cost))
		res1 = res
	}
	rep, rep1 := res.throttleReply(), res1.throttleReply()
	fail := func(what string, theirs, ours any) {
		t.Helper()
		t.Fatalf("%s: redis-cell %s %v, gcra.lua %v (CL.THROTTLE reply %v, d0 %d µs, d1 %d µs)", at(), what, theirs, ours, rep1, d0, d1)
	}
	if rep[1] != B {
		fail("limit", rep[1], B)
	}
	if (rep1[0] == 0) != (got[0] == 1) {
		fail("limited", rep1[0], got[0])
	}
	if rep[2] != got[1] {
		fail("remaining", rep[2], got[1])
	}
	switch {
	case got[0] == 1 || retryUs < 0:
		if rep1[3] != -1 {
			fail("retry_after s", rep1[3], got[2])
		}
	default:
		if res1.retryAfter != retryUs*1000 || rep1[3] != cellSeconds(retryUs*1000) {
			fail("retry_after ns / s", [2]int64{res1.retryAfter, rep1[3]}, retryUs*1000)
		}
	}
	if res.resetAfter != d1*1000 || rep[4] != cellSeconds(d1*1000) {
		fail("reset_after ns / s", [2]int64{res.resetAfter, rep[4]}, d1*1000)
	}
	tat, ok := p.cell.get(ns)
	if !ok || tat < ns {
		tat = ns
	}
	if tat != (now+d1)*1000 {
		fail("TAT ns", tat, (now+d1)*1000)
	}
}

func (p *peerRun) compareRate(at func() string, now int64, cost int, got [4]int64, d0, d1, retryUs int64) {
	t, B, T := p.t, int64(p.c.burst), p.c.interval()
	t.Helper()
	want := int64(max(cost, 1))
	var res, res1 rateResult
	if cost == 0 {
		res1 = p.rr.clone().allowN(now, 1)
		res = p.rr.allowN(now, 0)
	} else {
		res = p.rr.allowN(now, cost)
		res1 = res
	}
	fail := func(what string, theirs, ours any) {
		t.Helper()
		t.Fatalf("%s: redis_rate %s %v, gcra.lua %v (result %+v, d0 %d µs, d1 %d µs)", at(), what, theirs, ours, res1, d0, d1)
	}
	defer func() {
		// Its TAT agrees to the nearest µs; set it to ours so that float
		// error cannot pile up.
		p.rr.setTAT(now + d1)
	}()

	// redis_rate's diff for the deciding call, in exact µs.
	exactDiff := B*T - d0 - want*T
	if (res1.Allowed > 0) != (got[0] == 1) {
		if got[0] == 1 && exactDiff == 0 && math.Round(res1.diff*1e6) == 0 {
			p.explained["float boundary"]++
			return
		}
		fail("allowed", res1.Allowed, got[0])
	}
	if math.Round(res1.diff*1e6) != float64(exactDiff) {
		fail("diff µs", res1.diff*1e6, exactDiff)
	}
	if got[0] == 1 && res1.Allowed != int(want) {
		fail("Allowed", res1.Allowed, want)
	}

	// remaining
	switch {
	case cost > 0 && got[0] == 0:
		// It replies 0 on deny; the diff compared above carries the rest.
		if res.Remaining != 0 {
			fail("remaining on deny", res.Remaining, 0)
		}
	default:
		// Allowed, or a cost-0 call: diff is burst*T - d1 and remaining
		// truncates diff/T.
		if math.Round(res.diff*1e6) != float64(B*T-d1) {
			fail("diff µs after the call", res.diff*1e6, B*T-d1)
		}
		switch {
		case int64(res.Remaining) == got[1]:
		case int64(res.Remaining) == got[1]-1 && (B*T-d1)%T == 0 && res.remaining < float64(got[1]):
			p.explained["float remaining"]++
		default:
			fail("remaining", res.Remaining, got[1])
		}
	}

	// retry_after
	switch {
	case got[0] == 1:
		if res1.RetryAfter != -1 {
			fail("RetryAfter", res1.RetryAfter, got[2])
		}
	case retryUs < 0:
		// A cost above burst: we say never; it says when the TAT would let
		// it through, which is never true.
		if roundUs(res1.RetryAfter) != d0+(want-B)*T {
			fail("RetryAfter for a cost above burst (µs)", roundUs(res1.RetryAfter), d0+(want-B)*T)
		}
	default:
		if roundUs(res1.RetryAfter) != retryUs {
			fail("RetryAfter µs", roundUs(res1.RetryAfter), retryUs)
		}
	}
	if roundUs(res.ResetAfter) != d1 {
		fail("ResetAfter µs", roundUs(res.ResetAfter), d1)
	}
	eff := now
	if tat, ok := p.rr.tatUs(); ok {
		eff = max(tat, now)
	}
	if eff != now+d1 {
		fail("TAT µs", eff, now+d1)
	}
}

func (p *peerRun) report() {
	p.t.Helper()
	kinds := make([]string, 0, len(p.explained))
	for k := range p.explained {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		p.t.Logf("%s: %d of %d calls differ from redis_rate by %s (explained above)", p.c.name, p.explained[k], p.calls, k)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return -((-a) / b)
	}
	return (a + b - 1) / b
}

var peerCases = []peerCase{
	// Whole µs: CL.THROTTLE can say these (whole-second periods).
	{name: "5 per 1s burst 5", burst: 5, rate: 5, period: time.Second},
	{name: "1 per 1s burst 5", burst: 5, rate: 1, period: time.Second},
	{name: "5 per 2s burst 10", burst: 10, rate: 5, period: 2 * time.Second},
	{name: "60 per 60s burst 1", burst: 1, rate: 60, period: time.Minute},
	// Whole µs, sub-second: redis-cell's RateLimiter, not the command.
	{name: "10 per 100ms burst 3", burst: 3, rate: 10, period: 100 * time.Millisecond},
	// Not whole µs: T' = 333334 µs and 42858 µs.
	{name: "3 per 1s burst 4", burst: 4, rate: 3, period: time.Second},
	{name: "7 per 300ms burst 10", burst: 10, rate: 7, period: 300 * time.Millisecond},
}

// TestPeersRandom runs random in-order sequences on whole ms. A third of the
// calls land exactly when the last denied call was told to retry, so the
// boundaries are hit as often as the open ground.
func TestPeersRandom(t *testing.T) {
	for _, c := range peerCases {
		t.Run(c.name, func(t *testing.T) {
			maxGap := max(1, c.interval()*int64(c.burst)/4000) // ms
			for seed := int64(1); seed <= 6; seed++ {
				rng := rand.New(rand.NewSource(seed))
				p := newPeerRun(t, c)
				now := int64(scenario.T0)
				retryAt := int64(0)
				for range 250 {
					if retryAt > now && rng.Intn(3) == 0 {
						now = retryAt
					} else {
						now += rng.Int63n(maxGap+1) * 1000
					}
					cost := 1 + rng.Intn(min(c.burst, 3))
					switch rng.Intn(12) {
					case 0, 1:
						cost = 0
					case 2:
						cost = c.burst + 1 + rng.Intn(2)
					case 3:
						cost = c.burst
					}
					got := p.step(now, cost)
					if got[2] > 0 {
						retryAt = now + got[2]*1000
					}
				}
				p.report()
			}
		})
	}
}

// TestPeersHandPicked runs sequences chosen to sit on every edge.
func TestPeersHandPicked(t *testing.T) {
	type call struct {
		at   time.Duration
		cost int
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		c     peerCase
		calls []call
	}{
		{
			// redis-cell's own it_rate_limits table (max_burst 4, 1 per
			// second); TestCellModelMatchesItsTests checks the model on it.
			c: peerCase{name: "redis-cell's test table", burst: 5, rate: 1, period: time.Second},
			calls: []call{{0, 6}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1},
				{3000 * ms, 1}, {3100 * ms, 1}, {4000 * ms, 1}, {8000 * ms, 1}, {9500 * ms, 1},
				{9500 * ms, 0}, {9500 * ms, 2}, {9500 * ms, 5}},
		},
		{
			// Peeks on a missing key, a whole burst, one past it, the exact
			// instant of the next interval, and a cost above burst.
			c: peerCase{name: "burst edges 10 per 1s", burst: 10, rate: 10, period: time.Second},
			calls: []call{{0, 0}, {0, 10}, {0, 0}, {0, 1}, {99 * ms, 1}, {100 * ms, 1}, {100 * ms, 0},
				{150 * ms, 11}, {1100 * ms, 0}, {1100 * ms, 10}, {1100 * ms, 11}, {5 * time.Second, 1},
				{5 * time.Second, 1}, {5 * time.Second, 8}, {5 * time.Second, 1}, {5100 * ms, 2}},
		},
		{
			// A TAT that is not on a whole ms: T' = 333334 µs.
			c: peerCase{name: "3 per 1s burst 3", burst: 3, rate: 3, period: time.Second},
			calls: []call{{0, 1}, {0, 1}, {0, 1}, {0, 1}, {333 * ms, 1}, {334 * ms, 1}, {335 * ms, 0},
				{1000 * ms, 3}, {1001 * ms, 1}, {1002 * ms, 1}, {2000 * ms, 0}},
		},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			p := newPeerRun(t, tc.c)
			for _, cl := range tc.calls {
				p.step(scenario.T0+cl.at.Microseconds(), cl.cost)
			}
			p.report()
		})
	}
}

// TestCellModelMatchesItsTests checks the redis-cell model against the
// expectations of redis-cell's own unit test (it_rate_limits in
// redis-cell-impl/src/lib.rs): volume, remaining, reset_after, retry_after,
// limited, with max_burst 4 at 1 per second.
func TestCellModelMatchesItsTests(t *testing.T) {
	m := newCellThrottle(4, 1, 1)
	s, ms := int64(time.Second), int64(time.Millisecond)
	start := int64(scenario.T0) * 1000
	for i, tc := range []struct {
		at, volume, remaining, reset, retry int64
		limited                             bool
	}{
		{0, 6, 5, 0, -s, true},
		{0, 1, 4, s, -s, false},
		{0, 1, 3, 2 * s, -s, false},
		{0, 1, 2, 3 * s, -s, false},
		{0, 1, 1, 4 * s, -s, false},
		{0, 1, 0, 5 * s, -s, false},
		{0, 1, 0, 5 * s, s, true},
		{3000 * ms, 1, 2, 3000 * ms, -s, false},
		{3100 * ms, 1, 1, 3900 * ms, -s, false},
		{4000 * ms, 1, 1, 4000 * ms, -s, false},
		{8000 * ms, 1, 4, 1000 * ms, -s, false},
		{9500 * ms, 1, 4, 1000 * ms, -s, false},
		{9500 * ms, 0, 4, s, -s, false},
		{9500 * ms, 2, 2, 3 * s, -s, false},
		{9500 * ms, 5, 2, 3 * s, 3 * s, true},
	} {
		res := m.rateLimit(start+tc.at, tc.volume)
		if res.limited != tc.limited || res.limit != 5 || res.remaining != tc.remaining || res.resetAfter != tc.reset || res.retryAfter != tc.retry {
			t.Errorf("case %d: got %+v, redis-cell's test wants %+v", i, res, tc)
		}
	}
}
