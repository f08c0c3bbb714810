package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// All returns a Rule that asks every one of rules on its own: a request
// passes when every rule lets it, and the Decision's Parts hold each
// limit's answer. It is not atomic: a request one rule denies still counts
// in the others, and its Reserve holds those counts (use Atomic for all or
// nothing). Limiters on one client share one round trip. All refuses no
// rules, a nil one, and two limiters with one prefix on one client with
// ErrInvalid.
func All(rules ...Rule) (Rule, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("%w: All needs at least one rule", ErrInvalid)
	}
	a := &all{rules: append([]Rule(nil), rules...)}
	seen := map[string]*Limiter{}
	for i, r := range rules {
		var ls []*Limiter
		switch r := r.(type) {
		case nil:
			return nil, fmt.Errorf("%w: rule %d of All is nil", ErrInvalid, i)
		case *Limiter:
			if r == nil {
				return nil, fmt.Errorf("%w: rule %d of All is a nil *Limiter", ErrInvalid, i)
			}
			ls = []*Limiter{r}
		case *multi:
			ls = r.limiters
		}
		for _, l := range ls {
			if other, ok := seen[l.prefix]; ok && sameClient([]*Limiter{other, l}) {
				return nil, fmt.Errorf("%w: limiters %q and %q share the prefix %q on one client, so All would count one key twice", ErrInvalid, other.name, l.name, l.prefix)
			}
			seen[l.prefix] = l
		}
	}
	return a, nil
}

type all struct{ rules []Rule }

func (a *all) Allow(ctx context.Context, key string) (Decision, error) {
	return a.AllowN(ctx, key, 1)
}

func (a *all) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	if err := checkCost(n); err != nil {
		return Decision{}, err
	}
	return a.decide(ctx, key, n)
}

// Reserve asks every rule's Reserve in turn, each on its own round trip.
// As with AllowN, a request one rule denies still counts in the others:
// the reservation, allowed or denied, holds what every rule counted, and
// Settle settles those parts one by one.
func (a *all) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	if err := checkCost(n); err != nil {
		return nil, err
	}
	rs := make([]*Reservation, len(a.rules))
	ds := make([]Decision, len(a.rules))
	errs := make([]error, len(a.rules))
	for i, r := range a.rules {
		rs[i], errs[i] = r.Reserve(ctx, key, n)
		if rs[i] != nil {
			ds[i] = rs[i].Decision
		}
	}
	return reservationOf(combine(ds), rs), firstError(errs)
}

func (a *all) Peek(ctx context.Context, key string) (Decision, error) { return a.decide(ctx, key, 0) }

// decide sends the plain limiters (no lockout) that share the first one's
// client in one pipeline, and asks every other rule on its own.
func (a *all) decide(ctx context.Context, key string, n int64) (Decision, error) {
	ds := make([]Decision, len(a.rules))
	errs := make([]error, len(a.rules))
	var batch []int
	var first *Limiter
	for i, r := range a.rules {
		if l, ok := r.(*Limiter); ok && l.block == 0 && (first == nil || sameClient([]*Limiter{first, l})) {
			if first == nil {
				first = l
			}
			batch = append(batch, i)
		}
	}
	if len(batch) < 2 {
		batch = nil
	}
	if batch != nil {
		ls := make([]*Limiter, len(batch))
		for j, i := range batch {
			ls[j] = a.rules[i].(*Limiter)
		}
		bds, berrs := allowBatch(ctx, key, n, ls)
		for j, i := range batch {
			ds[i], errs[i] = bds[j], berrs[j]
		}
	}
	for i, r := range a.rules {
		if contains(batch, i) {
			continue
		}
		if n == 0 {
			ds[i], errs[i] = r.Peek(ctx, key)
		} else {
			ds[i], errs[i] = r.AllowN(ctx, key, n)
		}
	}
	d := combine(ds)
	return d, firstError(errs)
}

func contains(is []int, i int) bool {
	for _, j := range is {
		if j == i {
			return true
		}
	}
	return false
}

// allowBatch decides for limiters that share a client in one pipeline,
// through each one's stages (ARCHITECTURE.md) but with one send for all:
// those whose deny cache answers are not sent.
func allowBatch(ctx context.Context, key string, n int64, limiters []*Limiter) ([]Decision, []error) {
	var start time.Time
	for _, l := range limiters {
		if len(l.path.fns) > 0 {
			start = time.Now()
			break
		}
	}
	asks := make([]ask, len(limiters))
	ds := make([]Decision, len(limiters))
	checks := make([]cacheCheck, len(limiters))
	calls := make([]scriptCall, 0, len(limiters))
	send := make([]int, 0, len(limiters))
	errs := make([]error, len(limiters))
	refused := make([]bool, len(limiters)) // the key or clock: nothing sent
	var timeout time.Duration
	for i, l := range limiters {
		v := &l.path.validate
		a, err := v.check(l.ask(key, n))
		asks[i], errs[i], refused[i] = a, err, err != nil
		if err != nil {
			continue
		}
		if ds[i], checks[i] = v.cache.lookup(a); ds[i].Cached {
			continue
		}
		calls = append(calls, scriptCall{alg: a.alg, key: l.redisKey(key), limit: a.sends, cost: n, now: a.now})
		send = append(send, i)
		if l.timeout > 0 && (timeout == 0 || l.timeout < timeout) {
			timeout = l.timeout
		}
	}
	replies := make([]reply, len(limiters))
	if len(calls) > 0 {
		type sent struct {
			replies []reply
			errs    []error
		}
		s, err := call.WithTimeout(ctx, timeout, func(ctx context.Context) (sent, error) {
			replies, errs, ok := pipelined(ctx, limiters[0].rdb, calls)
			if !ok {
				return sent{}, errNoPipeline
			}
			return sent{replies, errs}, nil
		})
		if errors.Is(err, errNoPipeline) {
			for i, l := range limiters {
				ds[i], errs[i] = l.path.decide(ctx, l.ask(key, n))
			}
			return ds, errs
		}
		for j, i := range send {
			if err != nil { // the timeout: every call shares it
				errs[i] = err
			} else {
				replies[i], errs[i] = s.replies[j], s.errs[j]
			}
		}
	}
	for i, l := range limiters {
		c := &l.path.validate.cache
		switch {
		case ds[i].Cached:
		case refused[i]:
			ds[i] = asks[i].none()
		default:
			ds[i], errs[i] = c.lockout.fallback.settle(ctx, asks[i], replies[i], errs[i])
			c.note(asks[i], checks[i], 0, ds[i], errs[i])
		}
		l.path.tell(ctx, asks[i], ds[i], errs[i], start)
	}
	return ds, errs
}

var errNoPipeline = errors.New("ratelimit: the client cannot pipeline")
