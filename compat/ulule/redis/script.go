package redis

import (
	"context"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/redlimit/redlimit/bindings"
)

// The one place this package meets redlimit's scripts: a change in the
// generated bindings costs an edit here and nowhere else.

// fixedWindow runs fixed_window.lua for cost on key in rate's window, on
// the server's clock. Cost 0 peeks: it answers for a cost of 1 and writes
// nothing.
func fixedWindow(ctx context.Context, c Client, key string, rate limiter.Rate, cost int64) (bindings.FixedWindowResult, error) {
	return bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{
		Limit:    rate.Limit,
		Window:   rate.Period,
		Cost:     cost,
		Deadline: deadline(ctx),
	})
}

// deadline is when ctx's caller stops waiting, sent with every call: a
// call Redis runs at or after it (go-redis sending it again after a read
// timeout, a server that stalled with it queued) answers EXPIRED and
// counts nothing. The zero time, without a deadline, sends none.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// load loads fixed_window.lua into the script cache of c.
func load(ctx context.Context, c Client) error {
	return bindings.FixedWindowScript.Load(ctx, c).Err()
}
