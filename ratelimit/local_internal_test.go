package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

// An outage under a flood of keys cannot grow the in-memory state past
// maxLocalKeys; states that are full again go first.
func TestLocalMemoryBound(t *testing.T) {
	lc := newLocal()
	lim := PerMinute(10)
	for i := 0; i < maxLocalKeys+1000; i++ {
		lc.decide(fmt.Sprint("k", i), lim, 1, 1, int64(i))
	}
	if n := len(lc.tats); n > maxLocalKeys {
		t.Errorf("%d keys held, want at most %d", n, maxLocalKeys)
	}
	// Much later every state is full again: a new key evicts old ones.
	later := int64(time.Hour)
	lc.decide("new", lim, 1, 1, later)
	if _, ok := lc.tats["new"]; !ok || len(lc.tats) > maxLocalKeys {
		t.Errorf("the new key was not kept, or the map grew: %d", len(lc.tats))
	}
}
