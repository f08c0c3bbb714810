package main

// The deny cache: the same hammering through two limiters of one limit,
// one with WithDenyCache, each on a client that counts its round trips.
// Once Redis has denied a key, the cached limiter denies it in memory
// until the wait Redis gave runs out, and Redis never hears of it.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

var cacheLimit = ratelimit.Limit{Rate: 5, Period: 10 * time.Second, Burst: 5}

type cacheSide struct {
	Name       string `json:"name"`
	Decisions  int64  `json:"decisions"`
	Allowed    int64  `json:"allowed"`
	Cached     int64  `json:"cached"` // denials made without asking Redis
	RoundTrips int64  `json:"roundTrips"`
	limiter    *ratelimit.Limiter
	client     *scripter
}

type denyCache struct {
	mu    sync.Mutex
	sides [2]*cacheSide
	warm  bool // zeroed once after the script was loaded
}

func newDenyCache(s *server) (*denyCache, error) {
	c := &denyCache{}
	prefix := fmt.Sprintf("demo:cache:%d:", time.Now().UnixNano())
	for i, cached := range []bool{false, true} {
		side := &cacheSide{Name: "without a deny cache", client: &scripter{c: s.rdb}}
		opts := []ratelimit.Option{ratelimit.WithPrefix(fmt.Sprintf("%s%d:", prefix, i))}
		if cached {
			side.Name = "WithDenyCache(10000)"
			opts = append(opts, ratelimit.WithDenyCache(10000))
		}
		l, err := ratelimit.New(side.client, "hammered", cacheLimit, opts...)
		if err != nil {
			return nil, err
		}
		side.limiter = l
		c.sides[i] = side
	}
	return c, nil
}

// zero starts the count afresh. A Peek first has Redis load the script if
// it lacks it, so the EVAL after a NOSCRIPT is not counted against either
// side.
func (c *denyCache) zero(ctx context.Context) error {
	for _, side := range c.sides {
		if _, err := side.limiter.Peek(ctx, "warm-up"); err != nil {
			return err
		}
	}
	for _, side := range c.sides {
		side.Decisions, side.Allowed, side.Cached = 0, 0, 0
		side.client.calls.Store(0)
	}
	return nil
}

// ServeHTTP serves GET /api/denycache (the running totals) and POST
// /api/denycache?n=N: N more requests on one key through each limiter (1
// to 100), or ?reset=1; it answers the running totals.
func (c *denyCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method == http.MethodPost {
		if err := c.post(r); err != nil {
			if bad := (badInput{}); errors.As(err, &bad) {
				badRequest(w, bad.error)
			} else {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
			}
			return
		}
	}
	for _, side := range c.sides {
		side.RoundTrips = side.client.calls.Load()
	}
	writeJSON(w, map[string]any{"sides": c.sides, "limit": limitJSON(cacheLimit)})
}

// badInput is a request's own fault: a 400 whose detail is the error.
type badInput struct{ error }

func (c *denyCache) post(r *http.Request) error {
	const key = "hammer"
	q := r.URL.Query()
	if q.Get("reset") != "" {
		for _, side := range c.sides {
			if err := side.limiter.Reset(r.Context(), key); err != nil {
				return err
			}
		}
		return c.zero(r.Context())
	}
	n, err := wholeNumber("n", q.Get("n"))
	if err == nil && (n < 1 || n > 100) {
		err = fmt.Errorf("n: %d, want 1 to 100", n)
	}
	if err != nil {
		return badInput{err}
	}
	if !c.warm {
		if err := c.zero(r.Context()); err != nil {
			return err
		}
		c.warm = true
	}
	for range n {
		for _, side := range c.sides {
			d, err := side.limiter.Allow(r.Context(), key)
			if err != nil {
				return err
			}
			side.Decisions++
			if d.Allowed {
				side.Allowed++
			}
			if d.Cached {
				side.Cached++
			}
		}
	}
	return nil
}
