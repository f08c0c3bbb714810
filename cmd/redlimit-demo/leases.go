package main

// Leases in flight: at most 3 jobs at once for one key, each holding a
// lease of inflight (concurrency.lua) from its start until it releases it,
// or, for a job that crashes, until the lease's TTL runs out.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit/inflight"
)

const (
	leaseCap  = 3
	leaseTTL  = 15 * time.Second
	leaseHold = 5 * time.Second
)

type job struct {
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	Ends    time.Time `json:"ends"` // when it releases, or when a crashed one's lease expires
	Crashed bool      `json:"crashed"`
	timer   *time.Timer
	done    bool // released
}

type leases struct {
	mu      sync.Mutex
	limiter *inflight.Limiter
	jobs    []*job
	last    string // the last acquire's answer
}

func newLeases(s *server) (*leases, error) {
	l, err := inflight.New(s.rdb, "jobs", leaseCap, leaseTTL, inflight.WithPrefix(fmt.Sprintf("demo:jobs:%d:", time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	return &leases{limiter: l}, nil
}

// ServeHTTP serves GET /api/leases (the jobs in flight) and POST
// /api/leases?start=job|crash: a job that holds its lease 5 s and releases
// it, or one that crashes and never does.
func (ls *leases) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := time.Now()
	if r.Method == http.MethodPost {
		kind := r.URL.Query().Get("start")
		if kind != "job" && kind != "crash" {
			badRequest(w, fmt.Errorf("start: %q, want job or crash", kind))
			return
		}
		lease, d, err := ls.limiter.Acquire(r.Context(), "alice")
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		ls.last = d.String()
		if d.Allowed {
			j := &job{ID: lease.ID()[:min(8, len(lease.ID()))], Started: now, Crashed: kind == "crash", Ends: now.Add(leaseHold)}
			if j.Crashed {
				j.Ends = now.Add(leaseTTL) // nobody releases it: it lasts its TTL
			} else {
				j.timer = time.AfterFunc(leaseHold, func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_ = lease.Release(ctx)
					ls.mu.Lock()
					j.done = true
					ls.mu.Unlock()
				})
			}
			ls.jobs = append(ls.jobs, j)
		}
	}
	// Forget the jobs that ended: a job once its release is done, a
	// crashed one once its lease has expired.
	kept := ls.jobs[:0]
	for _, j := range ls.jobs {
		if !j.done && (!j.Crashed || now.Before(j.Ends)) {
			kept = append(kept, j)
		}
	}
	ls.jobs = kept
	writeJSON(w, map[string]any{"cap": leaseCap, "ttlMs": leaseTTL.Milliseconds(), "holdMs": leaseHold.Milliseconds(),
		"jobs": ls.jobs, "last": ls.last, "now": now})
}

// stop ends the jobs' timers (their leases then expire by their TTL).
func (ls *leases) stop() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, j := range ls.jobs {
		if j.timer != nil {
			j.timer.Stop()
		}
	}
}
