package main

// The compare view: one limit and one traffic pattern through all seven
// algorithms, decided by the real scripts on the demo's Redis through the
// real ratelimit API.
//
// The traffic runs on a simulated clock (WithClock, the scripts' caller
// clock), not on the wall clock: each request is decided at the instant
// the pattern gives it, to the microsecond, however loaded the machine, so
// a run is exact, repeatable and takes milliseconds instead of the
// pattern's 30 seconds. The scripts accept a caller clock within 60 s of
// Redis's TIME, so the simulation starts a few seconds after TIME and
// lasts at most maxSpan. It runs ahead of TIME, never behind: a call that finds no
// state is judged at the later of its clock and TIME, so a clock behind
// TIME would see every fresh key dated at TIME, in its future. Ahead of
// TIME, each write keeps its key 60 s past the instant its state is spent,
// so no key expires in the middle of a run. Each run has keys of its own,
// deleted when it ends.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

const (
	maxCompareRate   = 100
	minComparePeriod = 100 * time.Millisecond
	maxComparePeriod = 10 * time.Second
	// maxSpan is the longest pattern. With the lead before the first window
	// boundary (run: up to 8 s, then at most maxComparePeriod more) a run
	// stays inside the scripts' 60 s allowance for a caller clock.
	maxSpan   = 30 * time.Second
	maxEvents = 600
	// samples is how many times each lane's capacity is read (Peek, which
	// counts nothing) across the span, for its capacity line.
	samples = 120
)

// patterns are the compare view's traffic, by name.
var patterns = map[string]func(l ratelimit.Limit) (events []event, span time.Duration){
	// burst: twice the most the limit lets through at once, at one
	// instant; later, once more as many as it holds.
	"burst": func(l ratelimit.Limit) ([]event, time.Duration) {
		n := max(l.Rate, l.Burst)
		var ev []event
		ev = append(ev, repeat(l.Period/4, 2*n)...)
		ev = append(ev, repeat(l.Period*3/2, n)...)
		return ev, 2 * l.Period
	},
	// steady: evenly spaced, half again the rate, for three periods.
	"steady": func(l ratelimit.Limit) ([]event, time.Duration) {
		return evenly(0, 3*l.Period, 3*l.Rate*3/2), 3 * l.Period
	},
	// boundary: the attack on a fixed window. As many requests as the limit
	// lets through in the last tenth of a window, as many again in the
	// first tenth of the next: 2× the limit inside a fifth of a period.
	"boundary": func(l ratelimit.Limit) ([]event, time.Duration) {
		n := max(l.Rate, l.Burst)
		tenth := l.Period / 10
		ev := evenly(l.Period-tenth, l.Period, n)
		ev = append(ev, evenly(l.Period, l.Period+tenth, n)...)
		return ev, 2 * l.Period
	},
	// trickle: half the rate, evenly, for three periods: no algorithm
	// denies any of it.
	"trickle": func(l ratelimit.Limit) ([]event, time.Duration) {
		return evenly(0, 3*l.Period, max(1, 3*l.Rate/2)), 3 * l.Period
	},
}

// An event is one request of a pattern: its instant from the start of the
// run (a window boundary), in µs.
type event struct {
	At int64 `json:"at"`
}

func repeat(at time.Duration, n int64) []event {
	ev := make([]event, n)
	for i := range ev {
		ev[i].At = at.Microseconds()
	}
	return ev
}

// evenly spreads n requests over [from, to), the first at from.
func evenly(from, to time.Duration, n int64) []event {
	ev := make([]event, n)
	step := (to - from).Microseconds()
	for i := range ev {
		ev[i].At = from.Microseconds() + step*int64(i)/n
	}
	return ev
}

// A mark is one decision of a lane.
type mark struct {
	At         int64 `json:"at"` // µs from the start
	Allowed    bool  `json:"allowed"`
	Never      bool  `json:"never"` // denied, and can never pass: the cost is above the limit
	Remaining  int64 `json:"remaining"`
	RetryAfter int64 `json:"retryAfterUs,omitempty"` // a denial's wait; 0 when allowed or never
}

// A sample is a lane's capacity at an instant, from Peek.
type sample struct {
	At        int64 `json:"at"`
	Remaining int64 `json:"remaining"`
}

// totals sum up a lane. Admitted, Denied and Never count requests;
// MaxInPeriod is the most cost admitted in any span of one period.
type totals struct {
	Admitted    int   `json:"admitted"`
	Denied      int   `json:"denied"` // denied for now: waiting helps
	Never       int   `json:"never"`  // denied for good
	MaxInPeriod int64 `json:"maxInPeriod"`
}

type lane struct {
	Algorithm string   `json:"algorithm"`
	Limit     int64    `json:"limit"` // the most that passes at once
	Marks     []mark   `json:"marks"`
	Capacity  []sample `json:"capacity"`
	Totals    totals   `json:"totals"`
}

type comparison struct {
	Start    int64  `json:"start"` // the simulated clock at offset 0, µs since the epoch (a window boundary)
	Span     int64  `json:"span"`  // µs
	Period   int64  `json:"period"`
	Rate     int64  `json:"rate"`
	Burst    int64  `json:"burst"`
	Cost     int64  `json:"cost"`
	Pattern  string `json:"pattern"`
	Lanes    []lane `json:"lanes"`
	Requests int    `json:"requests"`
}

var runs atomic.Int64

// compare serves GET /api/compare: rate, period, burst and cost as for
// /api/limited, and pattern (burst, steady, boundary, trickle, or replay
// with times: the ms from the first request of each one, comma-separated).
func (s *server) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, cost, err := compareLimit(q)
	if err != nil {
		badRequest(w, err)
		return
	}
	name := q.Get("pattern")
	var events []event
	var span time.Duration
	if name == "replay" {
		events, span, err = replay(q.Get("times"), limit)
	} else if p, ok := patterns[name]; ok {
		events, span = p(limit)
	} else {
		err = fmt.Errorf("pattern: %q is none of burst, steady, boundary, trickle, replay", name)
	}
	if err == nil && span > maxSpan {
		err = fmt.Errorf("period: the %s pattern lasts %v at this period, over the %v the compare view simulates", name, span, maxSpan)
	}
	if err == nil && len(events) > maxEvents {
		err = fmt.Errorf("rate: the %s pattern sends %d requests at this limit; the compare view draws up to %d", name, len(events), maxEvents)
	}
	if err != nil {
		badRequest(w, err)
		return
	}
	c, err := s.run(r.Context(), limit, cost, events, span)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	c.Pattern = name
	writeJSON(w, c)
}

func compareLimit(q url.Values) (ratelimit.Limit, int64, error) {
	var l ratelimit.Limit
	var err error
	if l.Rate, err = wholeNumber("rate", q.Get("rate")); err != nil {
		return l, 0, err
	}
	if l.Burst, err = wholeNumber("burst", q.Get("burst")); err != nil {
		return l, 0, err
	}
	if l.Period, err = time.ParseDuration(strings.TrimSpace(q.Get("period"))); err != nil {
		return l, 0, fmt.Errorf("period: %q is not a duration such as 1s, 500ms or 1m", q.Get("period"))
	}
	cost := int64(1)
	if c := q.Get("cost"); c != "" {
		if cost, err = wholeNumber("cost", c); err != nil {
			return l, 0, err
		}
	}
	switch {
	case l.Rate < 1 || l.Rate > maxCompareRate:
		return l, 0, fmt.Errorf("rate: %d, the compare view takes 1 to %d", l.Rate, maxCompareRate)
	case l.Burst < 1 || l.Burst > maxCompareRate:
		return l, 0, fmt.Errorf("burst: %d, the compare view takes 1 to %d", l.Burst, maxCompareRate)
	case l.Period < minComparePeriod || l.Period > maxComparePeriod || l.Period%time.Millisecond != 0:
		return l, 0, fmt.Errorf("period: %v, the compare view takes whole milliseconds from %v to %v (it simulates its traffic on the scripts' caller clock, which they accept up to 60 s from Redis's)", l.Period, minComparePeriod, maxComparePeriod)
	case cost < 1 || cost > 1e9:
		return l, 0, fmt.Errorf("cost: %d requests, want 1 to 1e9", cost)
	}
	return l, cost, nil
}

// replay reads the times of "replay what I clicked": ms from the first
// click, in order. The run lasts half a period past the last.
func replay(times string, l ratelimit.Limit) ([]event, time.Duration, error) {
	if strings.TrimSpace(times) == "" {
		return nil, 0, fmt.Errorf("times: click the lane area or Tap first: nothing to replay")
	}
	var ev []event
	last := int64(-1)
	for _, f := range strings.Split(times, ",") {
		ms, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || ms < 0 || ms < last || ms > maxSpan.Milliseconds() {
			return nil, 0, fmt.Errorf("times: %q, want ms from 0 to %d in order", f, maxSpan.Milliseconds())
		}
		last = ms
		ev = append(ev, event{At: ms * 1000})
		if len(ev) > maxEvents {
			return nil, 0, fmt.Errorf("times: more than %d clicks", maxEvents)
		}
	}
	return ev, min(time.Duration(last)*time.Millisecond+l.Period/2, maxSpan), nil
}

// run decides events through every algorithm, each lane on its own limiter,
// keys and simulated clock, all lanes at once.
func (s *server) run(ctx context.Context, limit ratelimit.Limit, cost int64, events []event, span time.Duration) (comparison, error) {
	return simulate(ctx, s, limit.Period, func(start int64, p *punctual) (comparison, error) {
		return s.runAt(ctx, start, p, limit, cost, events, span)
	})
}

// simulate runs f on a simulated clock that starts at the first window
// boundary (of period) at least a lead after Redis's TIME, so the fixed
// window's boundary is where the pattern expects it. Each key's first
// request must reach Redis before TIME passes its instant (a call that
// finds no state is judged at the later of the two): f reports each with
// p.check, and when one was late (a loaded machine was slower than the
// lead) the run is made again, on fresh keys, with a longer lead.
func simulate[T any](ctx context.Context, s *server, period time.Duration, f func(start int64, p *punctual) (T, error)) (T, error) {
	var zero T
	for lead := time.Second; ; lead *= 2 {
		now, err := s.rdb.Time(ctx).Result()
		if err != nil {
			return zero, err
		}
		per := period.Microseconds()
		start := (now.Add(lead).UnixMicro() + per - 1) / per * per
		p := &punctual{s: s}
		out, err := f(start, p)
		if err != nil {
			return zero, err
		}
		if !p.late.Load() {
			return out, nil
		}
		if lead >= 8*time.Second {
			return zero, fmt.Errorf("the machine is too slow: Redis's clock passed the simulated one (%v ahead) during the run", lead)
		}
	}
}

// punctual tells whether the first requests of a run reached Redis in
// time.
type punctual struct {
	s    *server
	late atomic.Bool
}

// check, called right after a key's first request, notes when Redis's
// TIME has already reached the request's simulated instant sim (µs since
// the epoch). TIME after the call is no earlier than during it.
func (p *punctual) check(ctx context.Context, sim int64) error {
	now, err := p.s.rdb.Time(ctx).Result()
	if err == nil && now.UnixMicro() >= sim {
		p.late.Store(true)
	}
	return err
}

func (s *server) runAt(ctx context.Context, start int64, p *punctual, limit ratelimit.Limit, cost int64, events []event, span time.Duration) (comparison, error) {
	c := comparison{
		Start: start, Span: span.Microseconds(), Period: limit.Period.Microseconds(), Rate: limit.Rate, Burst: limit.Burst, Cost: cost,
		Requests: len(events),
	}
	prefix := fmt.Sprintf("demo:cmp:%d:", runs.Add(1))
	algs := algorithms()
	c.Lanes = make([]lane, len(algs))
	errs := make([]error, len(algs))
	var wg sync.WaitGroup
	for i, alg := range algs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Lanes[i], errs[i] = s.lane(ctx, alg, limit, cost, events, start, p, span, prefix)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return comparison{}, err
		}
	}
	return c, nil
}

func (s *server) lane(ctx context.Context, alg ratelimit.Algorithm, limit ratelimit.Limit, cost int64, events []event, start int64, p *punctual, span time.Duration, prefix string) (lane, error) {
	if s.windowed(alg) {
		limit.Burst = limit.Rate
	}
	var at int64 // the simulated clock, µs from start
	clock := func() time.Time { return time.UnixMicro(start + at) }
	l, err := ratelimit.New(s.rdb, alg.String(), limit, ratelimit.WithAlgorithm(alg),
		ratelimit.WithPrefix(prefix+alg.String()+":"), ratelimit.WithClock(clock))
	if err != nil {
		return lane{}, err
	}
	const key = "compare"
	defer func() { _ = l.Reset(context.WithoutCancel(ctx), key) }()
	out := lane{Algorithm: alg.String(), Limit: limit.Burst}
	// Requests and capacity samples in time order; a sample at the instant
	// of a request reads the state after it.
	next := 0
	for k := 0; k <= samples; k++ {
		t := span.Microseconds() * int64(k) / samples
		for ; next < len(events) && events[next].At <= t; next++ {
			at = events[next].At
			d, err := l.AllowN(ctx, key, cost)
			if err != nil {
				return lane{}, err
			}
			if next == 0 {
				if err := p.check(ctx, start+at); err != nil {
					return lane{}, err
				}
			}
			m := mark{At: at, Allowed: d.Allowed, Never: d.RetryAfter == ratelimit.Never, Remaining: d.Remaining}
			if !d.Allowed && !m.Never {
				m.RetryAfter = d.RetryAfter.Microseconds()
			}
			out.Marks = append(out.Marks, m)
		}
		at = t
		d, err := l.Peek(ctx, key)
		if err != nil {
			return lane{}, err
		}
		out.Capacity = append(out.Capacity, sample{At: t, Remaining: d.Remaining})
	}
	out.Totals = sum(out.Marks, cost, limit.Period.Microseconds())
	return out, nil
}

// sum counts a lane's decisions, and the most cost admitted in any span
// [t, t+period) (one starting at an admitted request is the largest).
func sum(marks []mark, cost, period int64) totals {
	var t totals
	var admitted []int64
	for _, m := range marks {
		switch {
		case m.Allowed:
			t.Admitted++
			admitted = append(admitted, m.At)
		case m.Never:
			t.Never++
		default:
			t.Denied++
		}
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	end := 0
	for i, from := range admitted {
		for end < len(admitted) && admitted[end] < from+period {
			end++
		}
		t.MaxInPeriod = max(t.MaxInPeriod, int64(end-i)*cost)
	}
	return t
}
