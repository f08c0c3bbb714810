package ratelimit

// FailLocal's in-memory limiter: a GCRA per key in this process, at a share
// of the limit, for while Redis cannot be asked.

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// maxLocalKeys bounds one limiter's in-memory state (about 100 bytes a
// key): an outage under a flood of keys must not exhaust the process.
const maxLocalKeys = 100_000

// evictSample is how many entries a full map (FailLocal's, a deny cache
// shard) looks at to make room: it drops every expired one it sees, or
// else the one that expires first. Map iteration starts at a random place,
// so this is a random sample (as Redis's own eviction samples keys).
const evictSample = 8

// localBase is the origin of the in-memory limiters' clock without a
// caller clock: this process's monotonic clock, in ns since it.
var localBase = time.Now()

var localIDs atomic.Uint64

type local struct {
	id   uint64 // the order in which an Atomic rule locks several
	mu   sync.Mutex
	tats map[string]localState
}

// localState is one key's GCRA state: the theoretical arrival time and the
// interval it counts in, ns, so that a changed limit rescales the units
// already counted as gcra.lua does (no free burst, no lockout). A quota's
// state is its period's count n, with tat the period's end and interval 0.
type localState struct {
	tat, interval float64
	n             int64
}

func newLocal() *local {
	return &local{id: localIDs.Add(1), tats: map[string]localState{}}
}

// scaled is share of lim: Rate and Burst times share, rounded down, at
// least 1.
func scaled(lim Limit, share float64) Limit {
	lim.Rate = max(1, int64(math.Floor(float64(lim.Rate)*share)))
	lim.Burst = max(1, int64(math.Floor(float64(lim.Burst)*share)))
	return lim
}

// check judges a request of cost (0 peeks) at now against key's state,
// with mu held, and returns the Decision and the state to store if the
// request is counted.
func (lc *local) check(key string, lim Limit, cost int64, now float64) (Decision, localState) {
	if lim.cal != 0 {
		return lc.checkQuota(key, lim, cost, now)
	}
	interval := float64(lim.Period) / float64(lim.Rate)
	horizon := float64(lim.Burst) * interval
	tat := now
	if st, ok := lc.tats[key]; ok && st.tat > now && st.interval > 0 {
		tat = now + (st.tat-now)/st.interval*interval
	}
	d := Decision{Limit: lim}
	remaining := func(t float64) int64 {
		return min(lim.Burst, max(0, int64(math.Floor((now+horizon-t)/interval+1e-9))))
	}
	if cost > lim.Burst {
		d.RetryAfter, d.Remaining, d.ResetAfter = Never, remaining(tat), ceilMs(int64(tat-now))
		return d, localState{tat: tat, interval: interval}
	}
	next := tat + float64(max(cost, 1))*interval
	if next-now > horizon+1e-3 {
		d.RetryAfter = max(ceilMs(int64(next-now-horizon)), time.Millisecond)
		d.Remaining, d.ResetAfter = remaining(tat), ceilMs(int64(tat-now))
		return d, localState{tat: tat, interval: interval}
	}
	d.Allowed = true
	if cost == 0 {
		d.Remaining, d.ResetAfter = remaining(tat), ceilMs(int64(tat-now))
		return d, localState{tat: tat, interval: interval}
	}
	d.Remaining, d.ResetAfter = remaining(next), ceilMs(int64(next-now))
	return d, localState{tat: next, interval: interval}
}

// checkQuota is check for a quota by the calendar: a count for the period
// of this process's calendar that holds now, as fixed_window.lua keeps.
func (lc *local) checkQuota(key string, lim Limit, cost int64, now float64) (Decision, localState) {
	wall := localWall(int64(now))
	_, end := lim.period(wall)
	st := localState{tat: now + float64(end.Sub(wall))}
	if old, ok := lc.tats[key]; ok && old.interval == 0 && old.tat > now {
		st.n = old.n // the same period: it ends at old.tat
	}
	d := Decision{Limit: lim}
	left := ceilMs(int64(st.tat - now))
	if st.n > 0 {
		d.ResetAfter = left
	}
	d.Remaining = max(0, lim.Rate-st.n)
	switch {
	case cost > lim.Rate:
		d.RetryAfter = Never
	case st.n+max(cost, 1) > lim.Rate:
		d.RetryAfter = left
	default:
		d.Allowed = true
		if cost > 0 {
			st.n += cost
			d.Remaining, d.ResetAfter = lim.Rate-st.n, left
		}
	}
	return d, st
}

// localWall is the wall-clock instant of the in-memory clock's now (ns):
// a caller clock is one already (a date after 2001 is above 1e18 ns); the
// monotonic time since localBase (31 years short of it) counts from
// localBase's wall clock.
func localWall(now int64) time.Time {
	if now > 1e18 {
		return time.Unix(0, now)
	}
	return localBase.Add(time.Duration(now))
}

// store keeps key's new state, making room first when the map is full:
// every state of a sample that is full again goes, or else the one that
// will be full soonest.
func (lc *local) store(key string, st localState, now float64) {
	if _, ok := lc.tats[key]; !ok && len(lc.tats) >= maxLocalKeys {
		var victim string
		soonest := math.Inf(1)
		seen, dropped := 0, false
		for k, t := range lc.tats {
			switch {
			case t.tat <= now:
				delete(lc.tats, k)
				dropped = true
			case t.tat < soonest:
				victim, soonest = k, t.tat
			}
			if seen++; seen == evictSample {
				break
			}
		}
		if !dropped {
			delete(lc.tats, victim)
		}
	}
	lc.tats[key] = st
}

// decide is one in-memory decision at share of lim.
func (lc *local) decide(key string, lim Limit, share float64, cost int64, now int64) Decision {
	lim = scaled(lim, share)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	d, st := lc.check(key, lim, cost, float64(now))
	if d.Allowed && cost > 0 {
		lc.store(key, st, float64(now))
	}
	return d
}

// decideAt is decide at now on the in-memory clock (localNowNs).
func (lc *local) decideAt(key string, lim Limit, share float64, cost int64, now time.Time) Decision {
	return lc.decide(key, lim, share, cost, localNowNs(now))
}

// forget drops key's state (Reset).
func (lc *local) forget(key string) {
	lc.mu.Lock()
	delete(lc.tats, key)
	lc.mu.Unlock()
}

// localNowNs is the in-memory clock: the caller clock when there is one,
// else the monotonic time since localBase.
func localNowNs(now time.Time) int64 {
	if !now.IsZero() {
		return now.UnixNano()
	}
	return int64(time.Since(localBase))
}

// localPart is one limit of an Atomic rule that decides in memory: its
// limiter's in-memory limiter and its share of the limit (scaled).
type localPart struct {
	lc  *local
	lim Limit
}

// decideLocally makes, all or nothing, the in-memory decisions of parts:
// each at its own share of its limit, and a request counted by every one
// or by none. allowed says whether the other limits (those that fail open
// or closed) let it pass.
func decideLocally(parts []localPart, key string, cost int64, now int64, allowed bool) []Decision {
	order := append([]localPart(nil), parts...)
	sort.Slice(order, func(a, b int) bool { return order[a].lc.id < order[b].lc.id })
	locked := map[*local]bool{}
	for _, p := range order {
		if !locked[p.lc] {
			p.lc.mu.Lock()
			locked[p.lc] = true
			defer p.lc.mu.Unlock()
		}
	}
	ds := make([]Decision, len(parts))
	states := make([]localState, len(parts))
	for j, p := range parts {
		ds[j], states[j] = p.lc.check(key, p.lim, cost, float64(now))
		allowed = allowed && ds[j].Allowed
	}
	if allowed && cost > 0 {
		for j, p := range parts {
			p.lc.store(key, states[j], float64(now))
		}
	}
	return ds
}
