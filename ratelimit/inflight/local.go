package inflight

import "sync"

// local is FailLocal's cap in this process: a count of leases per key.
type local struct {
	mu    sync.Mutex
	held  map[string]int64
	limit int64
}

// acquire takes a slot for key if fewer than limit are held, and says how
// many remain.
func (lc *local) acquire(key string) (remaining int64, ok bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	n := lc.held[key]
	if n >= lc.limit {
		return 0, false
	}
	lc.held[key] = n + 1
	return lc.limit - n - 1, true
}

func (lc *local) release(key string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.held[key] <= 1 {
		delete(lc.held, key) // no entry outlives its last lease
		return
	}
	lc.held[key]--
}
