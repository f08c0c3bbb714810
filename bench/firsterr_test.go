package bench

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// firstError keeps the first error set on it, from any goroutine. Unlike
// atomic.Value's CompareAndSwap it takes errors of any concrete type: a
// later error of another type than the first is ignored, not a panic.
type firstError struct {
	mu  sync.Mutex
	err error
}

// set records err if it is the first non-nil error set.
func (f *firstError) set(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

// get is the first error set, nil if none.
func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func TestFirstError(t *testing.T) {
	var f firstError
	if err := f.get(); err != nil {
		t.Fatalf("get before any set = %v, want nil", err)
	}
	first := errors.New("first")
	f.set(nil)
	f.set(first)
	f.set(fmt.Errorf("wrapped: %w", first)) // another concrete type
	f.set(errors.New("third"))
	if err := f.get(); err != first {
		t.Fatalf("get = %v, want the first error set", err)
	}

	// Concurrent sets of different types: one of them wins, none panics.
	var g firstError
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				g.set(errors.New("plain"))
			} else {
				g.set(fmt.Errorf("wrapped %d: %w", i, first))
			}
		}()
	}
	wg.Wait()
	if g.get() == nil {
		t.Fatal("get after concurrent sets = nil")
	}
}
