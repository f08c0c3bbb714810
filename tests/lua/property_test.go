package luatest

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redlimit/redlimit/tests/scenario"
)

// limiter describes one script configuration for the property tests.
type limiter struct {
	script string
	name   string
	args   func(cost int) []string // the limit and the cost (see withClock)
	// bound is the most cost that may be admitted within any closed span of
	// time of the given length.
	bound   func(span time.Duration) int
	maxCost int           // costs are drawn from 0..maxCost
	maxGap  time.Duration // gaps between calls are drawn from 0..maxGap
}

var limiters []limiter

// call is one decision in a random sequence.
type call struct {
	at      int64 // µs since the epoch, as sent
	cost    int
	allowed bool
	retryMs int64
}

func (l limiter) run(t *testing.T, r *Redis, src string, c *call) {
	t.Helper()
	argv := withClock(l.script, l.args(c.cost), strconv.FormatInt(c.at, 10), "0")
	reply, err := r.Eval(src, []string{"k"}, argv)
	if err != nil {
		t.Fatalf("%s %v: %v", l.name, argv, err)
	}
	got := reply.([]any)
	c.allowed, c.retryMs = got[0] == int64(1), got[2].(int64)
}

// sequence draws calls; with jitter, each call's clock may lag the one
// before by up to jitter (calls that reach Redis out of order).
func (l limiter) sequence(rng *rand.Rand, n int, jitter time.Duration) []call {
	calls := make([]call, n)
	at := int64(scenario.T0)
	for i := range calls {
		at += rng.Int63n(l.maxGap.Microseconds() + 1)
		lag := int64(0)
		if jitter > 0 {
			lag = rng.Int63n(jitter.Microseconds() + 1)
		}
		calls[i] = call{at: at - lag, cost: rng.Intn(l.maxCost + 1)}
	}
	return calls
}

func eachLimiter(t *testing.T, f func(t *testing.T, l limiter, src string, rng *rand.Rand)) {
	for _, l := range limiters {
		t.Run(l.script+"/"+l.name, func(t *testing.T) {
			t.Parallel() // each run has its own server and Lua state
			src, err := Source(l.script)
			if err != nil {
				t.Fatal(err)
			}
			for seed := int64(1); seed <= 20; seed++ {
				f(t, l, src, rand.New(rand.NewSource(seed)))
			}
		})
	}
}

// TestNeverOverAdmits checks every run of calls against the algorithm's
// bound, with calls in order and out of order. Out of order, a run of calls
// spans from the clock its first call sent to the latest clock seen by its
// last call: a late call may be judged at the time it carries, but it must
// not buy anything twice. Keys expire by the server's clock, which here lags
// the latest caller clock by the jitter: a key that expires while a caller
// still sends clocks from before its expiry loses what it knew (the README's
// caller-clock caveat).
func TestNeverOverAdmits(t *testing.T) {
	eachLimiter(t, func(t *testing.T, l limiter, src string, rng *rand.Rand) {
		for _, jitter := range []time.Duration{0, l.maxGap * 3} {
			r := New(scenario.T0)
			calls := l.sequence(rng, 300, jitter)
			type admit struct {
				sent, latest int64
				cost         int
			}
			var admitted []admit
			latest := int64(0)
			for i := range calls {
				latest = max(latest, calls[i].at)
				r.SetTime(max(r.Now(), latest-jitter.Microseconds()))
				l.run(t, r, src, &calls[i])
				if calls[i].allowed && calls[i].cost > 0 {
					admitted = append(admitted, admit{calls[i].at, latest, calls[i].cost})
				}
			}
			for i := range admitted {
				sum := 0
				for _, a := range admitted[i:] {
					sum += a.cost
					span := time.Duration(a.latest-admitted[i].sent) * time.Microsecond
					if b := l.bound(span); sum > b {
						t.Fatalf("jitter %v: admitted %d within %v, bound %d", jitter, sum, span, b)
					}
				}
			}
		}
	})
}

// TestPeekChangesNothing runs a sequence twice, once with a peek before every
// call, and wants the same decisions.
func TestPeekChangesNothing(t *testing.T) {
	eachLimiter(t, func(t *testing.T, l limiter, src string, rng *rand.Rand) {
		calls := l.sequence(rng, 200, 0)
		plain, peeked := New(scenario.T0), New(scenario.T0)
		for i := range calls {
			a, b, peek := calls[i], calls[i], call{at: calls[i].at}
			plain.SetTime(a.at)
			peeked.SetTime(a.at)
			l.run(t, plain, src, &a)
			l.run(t, peeked, src, &peek)
			l.run(t, peeked, src, &b)
			if a.allowed != b.allowed || a.retryMs != b.retryMs {
				t.Fatalf("call %d: %+v without a peek, %+v after one", i, a, b)
			}
		}
	})
}

// TestRetryAfterIsExact: after a denial, the same call is still denied 1 ms
// before retry_after and allowed at it, when nothing else happens.
func TestRetryAfterIsExact(t *testing.T) {
	eachLimiter(t, func(t *testing.T, l limiter, src string, rng *rand.Rand) {
		r := New(scenario.T0)
		for _, c := range l.sequence(rng, 200, 0) {
			r.SetTime(c.at)
			l.run(t, r, src, &c)
			if c.allowed || c.retryMs < 0 {
				continue
			}
			for _, probe := range []struct {
				after int64
				want  bool
			}{{c.retryMs - 1, false}, {c.retryMs, true}} {
				if probe.after < 0 {
					continue
				}
				p := call{at: c.at + probe.after*1000, cost: c.cost}
				clone := r.Clone()
				clone.SetTime(p.at)
				l.run(t, clone, src, &p)
				if p.cost > 0 && p.allowed != probe.want {
					t.Fatalf("denied cost %d at %d with retry_after %d ms; %d ms later allowed=%v",
						c.cost, c.at, c.retryMs, probe.after, p.allowed)
				}
			}
		}
	})
}

func perPeriod(burst, rate int, period time.Duration) func(time.Duration) int {
	return func(span time.Duration) int {
		return burst + int(int64(rate)*int64(span)/int64(period))
	}
}

func init() {
	tb := func(capacity, rate int, period time.Duration, refill string) func(int) []string {
		return func(cost int) []string { return scenario.Args(capacity, rate, period, refill, cost) }
	}
	limiters = append(limiters,
		limiter{script: "token_bucket", name: "smooth 5 per 1s", args: tb(5, 5, time.Second, "smooth"),
			bound: perPeriod(5, 5, time.Second), maxCost: 3, maxGap: 150 * time.Millisecond},
		limiter{script: "token_bucket", name: "smooth 7 per 300ms burst 10", args: tb(10, 7, 300*time.Millisecond, "smooth"),
			bound: perPeriod(10, 7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		limiter{script: "token_bucket", name: "smooth 3 per 1ms", args: tb(3, 3, time.Millisecond, "smooth"),
			bound: perPeriod(3, 3, time.Millisecond), maxCost: 2, maxGap: 200 * time.Microsecond},
		limiter{script: "token_bucket", name: "interval 4 per 1s burst 6", args: tb(6, 4, time.Second, "interval"),
			bound: func(span time.Duration) int { return 6 + 4*int(span/time.Second+1) }, maxCost: 3, maxGap: 200 * time.Millisecond},
	)
}
