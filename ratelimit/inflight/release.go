package inflight

// Background releases: a release that failed for want of Redis, or the
// release that undoes an acquire whose answer was lost, is kept and sent
// again until it gets through or its lease has expired anyway. Why the
// bound, the order and the batches: docs/scripts.md.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
)

// ErrReleaseDropped: a release failed (Redis unreachable), and the limiter
// already keeps MaxPending releases to send again, so this one is not
// sent again: its lease holds its slot until its TTL runs out. Release
// returns it (wrapping the failure), and the hook sees it for every
// release dropped, a failed Acquire's too.
var ErrReleaseDropped = errors.New("inflight: a failed release was dropped: the limiter keeps MaxPending releases already")

// MaxPending bounds the failed releases one Limiter keeps sending again
// (64 bytes each): holders' releases first, then failed acquires', the
// oldest of which a holder's release replaces when the bound is full.
const MaxPending = 10000

const (
	// Background releases are sent at most batchSize to a pipeline, each
	// pipeline bounded by batchTimeout: a stalled server then costs one
	// wait per attempt, not one per release.
	batchSize    = 256
	batchTimeout = time.Second
	// A background attempt that fails is made again after retryEvery,
	// then twice as long each time, up to retryAtMost.
	retryEvery  = 50 * time.Millisecond
	retryAtMost = 500 * time.Millisecond
	// downRetry is the wait while the node's breaker is open instead:
	// nothing is sent until it closes, so a short one costs nothing and
	// sends the releases soon after the node answers again.
	downRetry = 10 * time.Millisecond
)

// pending is one release kept for another try.
type pending struct {
	key, id string
	until   time.Time // the lease has expired by then, whatever happens
	held    bool      // a holder's release; else a failed acquire's
}

// releases is a Limiter's pending releases, sent by one goroutine while
// there are any.
type releases struct {
	mu       sync.Mutex
	held     []pending // the holders', oldest first
	acquires []pending // the failed acquires', oldest first
	// Taken by the sender and counted in the bound until they are back;
	// evict of the acquires' are dropped if they fail, for holders'
	// releases that took their room.
	sendingHeld, sendingAcquires, evict int
	running                             bool
}

// size is what counts against MaxPending; r.mu is held.
func (r *releases) size() int {
	return len(r.held) + len(r.acquires) + r.sendingHeld + r.sendingAcquires - r.evict
}

// keep queues a release of key's lease id to send again, or reports it
// dropped: it returns ErrReleaseDropped (wrapping cause) when there is no
// room. A holder's release makes room by dropping the oldest failed
// acquire's, which is reported too.
func (l *Limiter) keep(k, id string, held bool, cause error) error {
	p := pending{key: k, id: id, until: time.Now().Add(l.ttl), held: held}
	r := &l.pending
	r.mu.Lock()
	var dropped *pending
	if r.size() >= MaxPending {
		switch {
		case held && len(r.acquires) > 0:
			dropped = &r.acquires[0]
			r.acquires = r.acquires[1:]
		case held && r.sendingAcquires > r.evict:
			r.evict++ // one being sent gives its room back if it fails
		default:
			r.mu.Unlock()
			return l.dropped(p, cause, !held) // Release's own event reports a holder's
		}
	}
	if held {
		r.held = append(r.held, p)
	} else {
		r.acquires = append(r.acquires, p)
	}
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if dropped != nil {
		_ = l.dropped(*dropped, cause, true)
	}
	if start {
		go l.sendPending()
	}
	return nil
}

// dropped reports a release that is not sent again: the error it returns,
// and with notify an event for the hook.
func (l *Limiter) dropped(p pending, cause error, notify bool) error {
	err := fmt.Errorf("%w (lease of %q): %w", ErrReleaseDropped, p.key, cause)
	if notify && l.hook != nil {
		l.hook(context.Background(), Event{Name: l.name, Key: p.key, Op: string(opRelease), Err: err})
	}
	return err
}

// take removes up to batchSize releases to send, the holders' first, and
// drops those whose lease has expired by now: their slots are free. It
// reports false, and the sender stops, when none is left.
func (r *releases) take(now time.Time) ([]pending, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var batch []pending
	for _, q := range []*[]pending{&r.held, &r.acquires} {
		for len(*q) > 0 && len(batch) < batchSize {
			p := (*q)[0]
			*q = (*q)[1:]
			if now.Before(p.until) {
				batch = append(batch, p)
			}
		}
		if len(*q) == 0 {
			*q = nil // let the array go
		}
	}
	for _, p := range batch {
		if p.held {
			r.sendingHeld++
		} else {
			r.sendingAcquires++
		}
	}
	if len(batch) == 0 && len(r.held)+len(r.acquires) == 0 {
		r.running = false
		return nil, false
	}
	return batch, true
}

// back returns what a batch left to send again, ahead of what was queued
// since, and the evicted acquires' releases among them, dropped.
func (r *releases) back(sent, failed []pending) (dropped []pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range sent {
		if p.held {
			r.sendingHeld--
		} else {
			r.sendingAcquires--
		}
	}
	var held, acquires []pending
	for _, p := range failed {
		switch {
		case p.held:
			held = append(held, p)
		case r.evict > 0:
			r.evict--
			dropped = append(dropped, p)
		default:
			acquires = append(acquires, p)
		}
	}
	r.evict = 0 // one batch at a time: the rest got through and need no room
	r.held = append(held, r.held...)
	r.acquires = append(acquires, r.acquires...)
	return dropped
}

// sendPending sends the pending releases, batch after batch, until none is
// left: each that gets through, or answers anything but a failure of
// Redis, is done; the others are tried again after a wait that doubles
// from retryEvery up to retryAtMost while attempts fail.
func (l *Limiter) sendPending() {
	wait := retryEvery
	for {
		batch, ok := l.pending.take(time.Now())
		if !ok {
			return
		}
		var failed []pending
		var lastErr error
		for i, err := range l.releaseAll(batch) {
			switch {
			case errors.Is(err, redis.ErrClosed):
				// The client was closed: nothing it is given will ever be
				// sent, and trying until the leases expire would keep
				// this goroutine alive for as long.
				_ = l.dropped(batch[i], err, true)
			case err != nil && errors.Is(call.Classify(context.Background(), err), ratelimit.ErrUnavailable):
				failed = append(failed, batch[i])
				lastErr = err
			}
		}
		for _, p := range l.pending.back(batch, failed) {
			_ = l.dropped(p, lastErr, true)
		}
		if len(failed) == 0 {
			wait = retryEvery
			continue
		}
		if guard.Down(l.rdb, l.RedisKey(failed[0].key)) {
			// The node's breaker is open: an attempt costs nothing
			// but a look, and the releases go once it closes.
			time.Sleep(downRetry)
			continue
		}
		time.Sleep(wait)
		wait = min(2*wait, retryAtMost)
	}
}

// releaseAll sends the releases of batch in one pipeline when the client
// can pipeline, one by one otherwise, within batchTimeout, and returns
// each one's error.
func (l *Limiter) releaseAll(batch []pending) []error {
	errs, err := call.WithTimeout(context.Background(), batchTimeout, func(ctx context.Context) ([]error, error) {
		now, err := call.Clock(l.clock)
		if err != nil {
			return nil, err
		}
		ops := make([]leaseCall, len(batch))
		for i, p := range batch {
			ops[i] = leaseCall{key: l.RedisKey(p.key), id: p.id}
		}
		return releaseMany(ctx, l.rdb, ops, l.limit, l.ttl, now), nil
	})
	if err != nil { // the timeout, or the caller clock: every release shares it
		errs = make([]error, len(batch))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}
