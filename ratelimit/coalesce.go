package ratelimit

// Coalescing (group commit): while a decision for a Redis key is in flight
// from this limiter (or a WithLimit copy, which shares its state), further
// decisions for the key wait, and go to Redis together as one call of the
// batch script when it returns. The script decides them in order, each as
// its own call at that instant would be decided (lua/gcra.lua), so a batch
// changes no answer; it only saves round trips and Redis time on a hot key.
// A request alone on its key is sent at once, on its own goroutine, as it
// would be without coalescing. docs/performance.md says what it costs and
// when it helps.

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// maxBatch is the most requests one call decides: the batch scripts' count.
const maxBatch = 64

// coalesceShards are the independently locked parts of a coalescer, so that
// decisions on distinct keys meet no common lock.
const coalesceShards = 64

// A coalescer holds, per Redis key with a call in flight, the requests that
// wait for it. It is shared by a limiter and its WithLimit copies.
type coalescer struct {
	seed maphash.Seed
	// tickets number the requests as they are sent. A key's calls from
	// one coalescer go out one at a time, so for each key the tickets are
	// in the order Redis ran the requests: the deny cache keeps the
	// newest answer by them, whichever waiter wakes first.
	tickets atomic.Uint64
	shards  [coalesceShards]coalesceShard
}

type coalesceShard struct {
	mu sync.Mutex
	// keys has an entry for every key with a call in flight; its line is
	// nil while nobody waits (a lone decision allocates no line).
	keys map[string]*keyLine
	_    [40]byte // keep shards' locks on separate cache lines
}

// keyLine is the requests waiting for a key, in the order they came.
type keyLine struct {
	waiting []*waiter
}

// waiter is one request in a line. sent, left, out, the signal on done
// and the line are guarded by the shard's mu; out is written once, before
// done is signalled.
type waiter struct {
	ctx context.Context
	// a is the request: its algorithm, the limit sent (a.sends), its
	// cost and the caller clock (a.now, zero for the server's); whole,
	// for the refund of an admission it left (late.go).
	a    ask
	due  time.Time // when its caller stops waiting; zero for never
	sent bool
	left bool          // its caller left after it was sent: its answer is late
	seq  uint64        // its ticket, given as it is sent
	done chan struct{} // one slot: signalled, never closed, so it is reused
	out  outcome
}

// waiters keeps waiters, each with its channel, for the requests that wait
// next: they were 378 of the 870 B a coalesced decision allocated. A
// waiter goes back only when nothing else holds it: its answer was read,
// or it left the line unsent. One whose caller left after it was sent
// stays with its batch (flush gives back what it admitted) and is
// collected.
var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan struct{}, 1)} }}

// free puts w back in waiters; nothing may hold it.
func (w *waiter) free() {
	done := w.done
	*w = waiter{done: done}
	waiters.Put(w)
}

func newCoalescer() *coalescer {
	c := &coalescer{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].keys = map[string]*keyLine{}
	}
	return c
}

func (c *coalescer) shard(rk string) *coalesceShard {
	return &c.shards[maphash.String(c.seed, rk)%coalesceShards]
}

// batcher is the batch stage: a decision whose script decides batches
// goes through the limiter's coalescer, when it has one; any other goes
// to the send stage as it is.
type batcher struct {
	c    *coalescer // nil WithoutCoalescing; shared by WithLimit's copies
	send sender
}

// A ticket is how the coalescer sent a request: its seq (0: not through
// the coalescer), and whether it went in a batch after waiting in its
// key's line, which its Decision's Source says.
type ticket struct {
	seq     uint64
	batched bool
}

func (b *batcher) decide(ctx context.Context, a ask) (r reply, t ticket, err error) {
	rk := key.Redis(a.prefix, a.key)
	if b.c == nil || scripts[a.alg].batch == nil {
		r, err = b.send.send(ctx, rk, a)
		return r, ticket{}, err
	}
	return b.c.decide(ctx, &b.send, rk, a)
}

// decide decides one request on the Redis key rk. When no call for rk is in
// flight it sends its own at once, under ctx and the timeout, as an
// uncoalesced decision would; otherwise it waits in rk's line for a batch
// (see wait).
func (c *coalescer) decide(ctx context.Context, s *sender, rk string, a ask) (r reply, t ticket, err error) {
	if s.down(rk) {
		r, err = s.send(ctx, rk, a) // fails at once: nothing to wait for
		return r, t, err
	}
	sh := c.shard(rk)
	sh.mu.Lock()
	line, busy := sh.keys[rk]
	if !busy {
		sh.keys[rk] = nil
		t.seq = c.tickets.Add(1)
		sh.mu.Unlock()
		if s.plain(ctx) { // as send's call would run it, with no closure
			r, err = c.alone(ctx, s, rk, a)
			return r, t, err
		}
		// The key is handed on when the call returns, which may be after
		// the timeout has answered its caller: the requests behind it do
		// not pile onto a Redis that has not answered yet.
		sc := scriptOf(rk, a) // captured as it is: a is too large not to escape
		r, err = s.call(ctx, rk, a, func(ctx context.Context) (reply, error) {
			defer c.next(s, sc.key)
			return s.script(ctx, sc)
		})
		return r, t, err
	}
	w := waiters.Get().(*waiter)
	w.ctx, w.a, w.due = ctx, a, s.due(ctx)
	if line == nil {
		line = &keyLine{}
		sh.keys[rk] = line
	}
	line.waiting = append(line.waiting, w)
	sh.mu.Unlock()
	return c.wait(s, sh, line, w)
}

// alone sends a's call on rk, alone on its key, and then hands rk on,
// even if the call panics (a go-redis hook's), as send's call would.
func (c *coalescer) alone(ctx context.Context, s *sender, rk string, a ask) (reply, error) {
	defer c.next(s, rk)
	return s.script(ctx, scriptOf(rk, a))
}

// wait waits for w's batch to answer, for ctx to end, or for the limiter's
// timeout. A waiter that leaves before its batch is sent is taken out of
// the line and counts nothing; one that leaves after is bounded by its
// deadline, which its request carries: Redis counts it only if it runs the
// batch before then, and its batch then gives it back. w is freed unless
// its batch still holds it.
func (c *coalescer) wait(snd *sender, s *coalesceShard, line *keyLine, w *waiter) (reply, ticket, error) {
	var expire <-chan time.Time
	if snd.timeout > 0 {
		t := time.NewTimer(snd.timeout)
		defer t.Stop()
		expire = t.C
	}
	var err error
	select {
	case <-w.done:
		return w.answer()
	case <-w.ctx.Done():
		err = w.ctx.Err()
	case <-expire:
		err = fmt.Errorf("%w: no answer within %v", ErrUnavailable, snd.timeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.done: // the answer came as the wait ended: keep it
		return w.answer()
	default:
	}
	if w.sent {
		w.left = true // its batch gives back what it admitted (flush)
		return reply{}, ticket{seq: w.seq, batched: true}, err
	}
	for i, o := range line.waiting {
		if o == w {
			line.waiting = append(line.waiting[:i], line.waiting[i+1:]...)
			break
		}
	}
	w.free()
	return reply{}, ticket{}, err
}

// answer is the answer of w, whose done was signalled, and its ticket; w
// is freed.
func (w *waiter) answer() (reply, ticket, error) {
	r, err := w.result()
	t := ticket{seq: w.seq, batched: true}
	w.free()
	return r, t, err
}

// result is w's answer. Its error, a request Redis ran past its deadline
// or the batch's own, is judged by w's own context and due, as a call of
// its own would be (call.ClockRefused).
func (w *waiter) result() (reply, error) {
	if w.out.err != nil {
		return reply{}, call.ClockRefusedBy(w.ctx, w.due, w.out.err)
	}
	return w.out.r, nil
}

// next hands rk, whose call just returned, to the requests that came
// meanwhile: the first one's batch goes out on a goroutine of its own, so
// the caller that returns is not held up. With nobody waiting, rk has no
// call in flight any more.
func (c *coalescer) next(snd *sender, rk string) {
	s := c.shard(rk)
	s.mu.Lock()
	line := s.keys[rk]
	if line == nil || len(line.waiting) == 0 {
		delete(s.keys, rk)
		s.mu.Unlock()
		return
	}
	batch := line.take(&c.tickets)
	s.mu.Unlock()
	go c.flush(snd, rk, batch)
}

// take takes the next batch out of the line: in the order they came, up to
// maxBatch of the requests that the first one's script, limit and clock
// decide (WithLimit copies share a key under several limits, and a caller
// clock judges only the requests that read the same µs). The others keep
// their places for the batches after. Each one taken gets its ticket.
func (line *keyLine) take(tickets *atomic.Uint64) []*waiter {
	h := line.waiting[0]
	batch := make([]*waiter, 0, min(len(line.waiting), maxBatch))
	rest := line.waiting[:0]
	for _, w := range line.waiting {
		if len(batch) < maxBatch && w.a.alg == h.a.alg && w.a.sends == h.a.sends && w.a.now.IsZero() == h.a.now.IsZero() && w.a.now.UnixMicro() == h.a.now.UnixMicro() {
			w.sent = true
			w.seq = tickets.Add(1)
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(line.waiting[len(rest):])
	line.waiting = rest
	return batch
}

// flush sends one batch and answers each of its waiters. The call runs
// under the first waiter's context without its cancellation (another
// waiter's request must not fail because the first one gave up), until the
// latest deadline of the batch, and lateWithin past it when the limiter
// has room to read late answers; each request carries its own. What it
// admitted for waiters that left is given back.
func (c *coalescer) flush(snd *sender, rk string, batch []*waiter) {
	h := batch[0]
	reqs := make([]request, len(batch))
	var latest time.Time
	forever := false
	for i, w := range batch {
		reqs[i] = request{cost: w.a.cost, due: w.due}
		if w.due.IsZero() {
			forever = true
		} else if w.due.After(latest) {
			latest = w.due
		}
	}
	ctx := context.WithoutCancel(h.ctx)
	if !forever {
		if snd.late != nil && snd.late.stay() {
			defer snd.late.done()
			latest = latest.Add(lateWithin)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	outs, err := scripts[h.a.alg].batch(ctx, snd.rdb, rk, h.a.sends, h.a.now, reqs)
	var left []ask
	s := c.shard(rk)
	s.mu.Lock()
	for i, w := range batch {
		if err != nil {
			w.out = outcome{err: err}
		} else {
			w.out = outs[i]
		}
		if w.left {
			if w.out.err == nil && w.out.r.Allowed && w.a.cost > 0 {
				left = append(left, w.a)
			}
			continue
		}
		w.done <- struct{}{}
	}
	s.mu.Unlock()
	c.next(snd, rk)
	if snd.late != nil {
		snd.late.batch(rk, left)
	}
}
