package scriptingtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// Call is one decision of Paced callers: when it began, how long it took,
// and whether the fallback made it (its Cause is set).
type Call struct {
	Start    time.Time
	Took     time.Duration
	Fallback bool
}

// Paced is a fault test's load: 8 goroutines deciding on keys k0…k15 in
// turn, a millisecond apart (so that failing fast does not spin), each
// call recorded, until Stop. An error is a test error, prefixed by name:
// under a fallback no decision fails.
type Paced struct {
	mu    sync.Mutex
	calls []Call
	stop  chan struct{}
	wg    sync.WaitGroup
}

// StartPaced starts the callers of l.
func StartPaced(t testing.TB, name string, l ratelimit.Rule) *Paced {
	p := &Paced{stop: make(chan struct{})}
	ctx := context.Background()
	for w := 0; w < 8; w++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-p.stop:
					return
				default:
				}
				start := time.Now()
				d, err := l.Allow(ctx, fmt.Sprint("k", (w+i)%16))
				if err != nil {
					t.Errorf("%s: an error under the fallback: %v", name, err)
				}
				p.mu.Lock()
				p.calls = append(p.calls, Call{start, time.Since(start), d.Cause != nil})
				p.mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	return p
}

// Stop stops the callers and returns their calls.
func (p *Paced) Stop() []Call {
	close(p.stop)
	p.wg.Wait()
	return p.calls
}
