package main

// Two limits at once: the same hammering client through an Atomic rule
// and through All (each limit on its own), on the simulated clock of the
// compare view. What each limit counted is read with Peek at the same
// instant before and after each request, so "wasted" (quota a limit spent
// on requests that were denied anyway) is measured, not inferred.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

var (
	twoShort = ratelimit.PerSecond(5)
	twoLong  = ratelimit.Limit{Rate: 20, Period: 10 * time.Second, Burst: 20}
)

const (
	twoRate = 10 // requests a second, twice what the short limit lets through
	twoSpan = 8 * time.Second
)

// A strategy is one way of checking both limits, with what it did.
type strategy struct {
	Name      string   `json:"name"`
	Atomic    bool     `json:"atomic"`
	Marks     []mark   `json:"marks"`
	Capacity  []sample `json:"capacity"` // the long limit's
	Admitted  int      `json:"admitted"`
	Denied    int      `json:"denied"`
	Counted   [2]int64 `json:"counted"` // by the short and the long limit
	Wasted    [2]int64 `json:"wasted"`  // of which on requests that were denied
	LongLimit int64    `json:"longLimit"`
}

// two serves GET /api/two: 80 requests, ten a second, against "5 a second
// and 20 every 10 seconds", checked by an Atomic rule and by All.
func (s *server) two(w http.ResponseWriter, r *http.Request) {
	events := evenly(0, twoSpan, twoRate*int64(twoSpan/time.Second))
	out, err := simulate(r.Context(), s, time.Second, func(start int64, p *punctual) ([2]strategy, error) {
		// Both at once, so that neither starts late.
		id := runs.Add(1)
		var res [2]strategy
		var errs [2]error
		var wg sync.WaitGroup
		for i, atomic := range []bool{true, false} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = s.strategy(r.Context(), fmt.Sprintf("demo:two:%d:%d:", id, i), atomic, start, p, events)
			}()
		}
		wg.Wait()
		return res, errors.Join(errs[:]...)
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{"strategies": out, "span": twoSpan.Microseconds(),
		"short": limitJSON(twoShort), "long": limitJSON(twoLong)})
}

func limitJSON(l ratelimit.Limit) map[string]any {
	return map[string]any{"rate": l.Rate, "periodMs": l.Period.Milliseconds(), "burst": l.Burst}
}

func (s *server) strategy(ctx context.Context, prefix string, atomic bool, start int64, p *punctual, events []event) (strategy, error) {
	var at int64
	clock := ratelimit.WithClock(func() time.Time { return time.UnixMicro(start + at) })
	short, err := ratelimit.New(s.rdb, "per-second", twoShort, ratelimit.WithPrefix(prefix+"s:"), clock)
	if err != nil {
		return strategy{}, err
	}
	long, err := ratelimit.New(s.rdb, "per-10s", twoLong, ratelimit.WithPrefix(prefix+"l:"), clock)
	if err != nil {
		return strategy{}, err
	}
	st := strategy{Name: "All: each limit on its own", Atomic: atomic, LongLimit: twoLong.Burst}
	var rule ratelimit.Rule
	if atomic {
		st.Name = "Atomic: all or nothing"
		rule, err = ratelimit.Atomic(short, long)
	} else {
		rule, err = ratelimit.All(short, long)
	}
	if err != nil {
		return strategy{}, err
	}
	const key = "hammer"
	defer func() {
		for _, l := range []*ratelimit.Limiter{short, long} {
			_ = l.Reset(context.WithoutCancel(ctx), key)
		}
	}()
	left := func() ([2]int64, error) {
		var r [2]int64
		for i, l := range []*ratelimit.Limiter{short, long} {
			d, err := l.Peek(ctx, key)
			if err != nil {
				return r, err
			}
			r[i] = d.Remaining
		}
		return r, nil
	}
	for _, e := range events {
		at = e.At
		before, err := left()
		if err != nil {
			return strategy{}, err
		}
		d, err := rule.AllowN(ctx, key, 1)
		if err != nil {
			return strategy{}, err
		}
		if len(st.Marks) == 0 {
			if err := p.check(ctx, start+at); err != nil {
				return strategy{}, err
			}
		}
		after, err := left()
		if err != nil {
			return strategy{}, err
		}
		for i := range after {
			n := before[i] - after[i] // the same instant: nothing refilled
			st.Counted[i] += n
			if !d.Allowed {
				st.Wasted[i] += n
			}
		}
		if d.Allowed {
			st.Admitted++
		} else {
			st.Denied++
		}
		st.Marks = append(st.Marks, mark{At: at, Allowed: d.Allowed, Remaining: d.Remaining})
		st.Capacity = append(st.Capacity, sample{At: at, Remaining: after[1]})
	}
	return st, nil
}
