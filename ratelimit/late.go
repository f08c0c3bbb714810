package ratelimit

// Late answers: a call Redis ran before its deadline but whose reply came
// after its caller had been answered otherwise (its context's error, or
// ErrUnavailable and a fallback's decision). The scripts' deadline keeps a
// call that starts late from counting; one that ran in time counted, and
// only its reply can say so. So the send stages read such a call on past
// its caller, for a bounded time and a bounded number of calls, and give an
// admission it reports back with the algorithm's settle (delta −cost): a
// request its caller was told nothing of, or denied, counts nothing.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

const (
	// lateWithin is how long after its caller left a call is still read:
	// go-redis's default read timeout, which bounds such a read anyway.
	lateWithin = 3 * time.Second
	// maxLate bounds the calls one limiter and its WithLimit copies read
	// on, or give back, after their callers left. A call past it is cut
	// as the caller leaves, and an admission it reports anyway stays
	// counted (reported).
	maxLate = 1024
)

// errLateCounted is the Err of a late admission's Event when it stays
// counted.
var errLateCounted = errors.New("ratelimit: an admission answered after its caller left stays counted")

// late gives back the admissions whose answers came after their callers
// left. It is shared by a limiter and its WithLimit copies.
type late struct {
	n     atomic.Int64     // calls read on or being given back
	max   int64            // maxLate (tests set less)
	rdb   redis.Scripter   // the limiter's guarded client
	clock func() time.Time // WithClock's
	// prefix is the limiter's; an ask with another is its lockout's.
	prefix string
	// forget drops key's cached denial after a refund (nil without a deny
	// cache); report tells the hooks of a refund, made (nil err) or not
	// (nil without hooks).
	forget func(key string)
	report func(a ask, err error)
}

// stay takes a place for a call read on past its caller.
func (l *late) stay() bool {
	if l.n.Add(1) > l.max {
		l.n.Add(-1)
		return false
	}
	return true
}

// done gives a place back.
func (l *late) done() { l.n.Add(-1) }

// answered handles the reply of a's call on the Redis key rk that came
// after a's caller left: an admission is given back. kept says whether
// the call holds a place (stay).
func (l *late) answered(rk string, a ask, r reply, err error, kept bool) {
	switch {
	case !kept && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// Cut as its caller left, for want of a place: as before late
		// answers were read, it may have counted.
		l.tell(a, fmt.Errorf("%w maybe: its answer was not read, %d late answers being read already", errLateCounted, l.max))
		return
	case err != nil || !r.Allowed:
		if kept {
			l.done()
		}
		return // nothing was counted, or nothing is known
	case !kept && !l.stay():
		l.tell(a, fmt.Errorf("%w: %d late answers being read or given back already", errLateCounted, l.max))
		return
	}
	defer l.done()
	l.tell(a, l.refund(rk, a))
}

// refund gives back a's admission on rk; nil when it was given back.
func (l *late) refund(rk string, a ask) error {
	s := scripts[a.alg]
	switch {
	case a.prefix != l.prefix:
		// A lockout that started stays: the request that used the limit
		// up counted, and the lockout is there to protect.
		return fmt.Errorf("%w: a lockout stays once started", errLateCounted)
	case s.settleAt && a.now.IsZero():
		// The window that counted it is the server's to know.
		return fmt.Errorf("%w: %v settles by window, and the server's clock counted it", errLateCounted, a.alg)
	}
	now, err := call.Clock(l.clock)
	if err != nil {
		return fmt.Errorf("%w: %w", errLateCounted, err)
	}
	// Bounded by lateWithin, not the limiter's timeout: nobody waits for
	// it, and a refund that fails leaves the admission counted.
	ctx, cancel := context.WithTimeout(context.Background(), lateWithin)
	defer cancel()
	if _, err := s.settle(ctx, l.rdb, rk, a.sends, -min(a.cost, maxCount), now, a.now); err != nil {
		return fmt.Errorf("%w: its refund failed: %w", errLateCounted, err)
	}
	if l.forget != nil {
		l.forget(a.key)
	}
	return nil
}

func (l *late) tell(a ask, err error) {
	if l.report != nil {
		l.report(a, err)
	}
}

// batch hands back the admissions of a batch whose callers left: one
// refund of their sum (a settle gives back up to its delta, never past a
// full limit, so the sum is their refunds in a row), and an Event each.
func (l *late) batch(rk string, asks []ask) {
	if len(asks) == 0 {
		return
	}
	if !l.stay() {
		for _, a := range asks {
			l.tell(a, fmt.Errorf("%w: %d late answers being read or given back already", errLateCounted, l.max))
		}
		return
	}
	defer l.done()
	sum := asks[0]
	for _, a := range asks[1:] {
		sum.cost += a.cost
	}
	err := l.refund(rk, sum)
	for _, a := range asks {
		l.tell(a, err)
	}
}
