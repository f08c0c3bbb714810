package ratelimit

// Wait's turns (wait.go): a line per key, shared by WithLimit's copies.

import (
	"context"
	"sync"
)

// waitQueue lets one waiter per key at a time ask Redis; the others wait
// their turn in the order they came (a channel's receivers are served in
// order).
type waitQueue struct {
	mu    sync.Mutex
	slots map[string]*waitSlot
}

type waitSlot struct {
	turn chan struct{} // holds a token while nobody has the turn
	refs int
}

// enter waits for key's turn and returns its release.
func (q *waitQueue) enter(ctx context.Context, key string) (release func(), err error) {
	q.mu.Lock()
	if q.slots == nil {
		q.slots = map[string]*waitSlot{}
	}
	s := q.slots[key]
	if s == nil {
		s = &waitSlot{turn: make(chan struct{}, 1)}
		s.turn <- struct{}{}
		q.slots[key] = s
	}
	s.refs++
	q.mu.Unlock()
	leave := func() {
		q.mu.Lock()
		if s.refs--; s.refs == 0 {
			delete(q.slots, key) // no entry outlives its last waiter
		}
		q.mu.Unlock()
	}
	select {
	case <-s.turn:
		return func() { s.turn <- struct{}{}; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
