package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	libredis "github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
)

// Client is what a Store needs of its go-redis v9 client: *redis.Client,
// *redis.ClusterClient, *redis.Ring and a UniversalClient all have it.
type Client interface {
	libredis.Scripter
	Del(ctx context.Context, keys ...string) *libredis.IntCmd
}

// ErrRate is the error of a call whose limiter.Rate cannot be counted: a
// negative Limit or one above 1e9, or a Period that is not a whole number
// of milliseconds from 1 ms to 1e11 ms. Nothing is sent.
var ErrRate = errors.New("redlimit/ulule: bad limiter.Rate")

// ErrCount is the error of an Increment by a count below 0 or above 1e9.
// Nothing is sent.
var ErrCount = errors.New("redlimit/ulule: Increment count is not from 0 to 1e9")

// Store is a limiter.Store whose counting is done by redlimit's fixed
// window script, one atomic call per decision.
type Store struct {
	client Client
	prefix string
}

// NewStore returns a Store with ulule's default prefix, "limiter".
func NewStore(client Client) (limiter.Store, error) {
	return NewStoreWithOptions(client, limiter.StoreOptions{Prefix: limiter.DefaultPrefix})
}

// NewStoreWithOptions returns a Store that keeps the count of key k at
// <Prefix>:<k>, as ulule's Redis store does. Of the options only Prefix
// applies (MaxRetry is deprecated in ulule too; CleanUpInterval is for its
// memory store). Like ulule's, it loads the script and fails when Redis
// cannot be reached; the Store reloads it by itself after a SCRIPT FLUSH
// or a failover.
func NewStoreWithOptions(client Client, options limiter.StoreOptions) (limiter.Store, error) {
	if err := load(context.Background(), client); err != nil {
		return nil, fmt.Errorf("redlimit/ulule: loading the fixed window script: %w", err)
	}
	return &Store{client: client, prefix: options.Prefix}, nil
}

// Get counts one request for key and returns its context.
func (s *Store) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.Increment(ctx, key, 1, rate)
}

// Increment counts count requests for key, all or none: when they do not
// fit in what is left of the window, none is counted and Reached is true.
// A count of 0 is Peek.
func (s *Store) Increment(ctx context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	if count < 0 || count > 1e9 {
		return limiter.Context{}, fmt.Errorf("%w: %d", ErrCount, count)
	}
	return s.decide(ctx, key, count, rate)
}

// Peek returns the context of key without counting anything. Reached says
// whether a Get would now be refused.
func (s *Store) Peek(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return s.decide(ctx, key, 0, rate)
}

// Reset deletes key's count, as ulule's store does.
func (s *Store) Reset(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	if err := checkRate(rate); err != nil {
		return limiter.Context{}, err
	}
	if err := s.client.Del(ctx, s.key(key)).Err(); err != nil {
		return limiter.Context{}, err
	}
	return limiter.Context{Limit: rate.Limit, Remaining: rate.Limit, Reset: unixCeil(time.Now())}, nil
}

func (s *Store) key(key string) string { return s.prefix + ":" + key }

// decide counts cost (0 peeks) for key in rate's window.
func (s *Store) decide(ctx context.Context, key string, cost int64, rate limiter.Rate) (limiter.Context, error) {
	if err := checkRate(rate); err != nil {
		return limiter.Context{}, err
	}
	if rate.Limit == 0 {
		// ulule counts every request against a limit of 0 and so refuses
		// it: no count is needed to say so.
		return limiter.Context{Reset: unixCeil(time.Now()), Reached: true}, nil
	}
	sent := time.Now()
	r, err := fixedWindow(ctx, s.client, s.key(key), rate, cost)
	if err != nil {
		return limiter.Context{}, err
	}
	return limiter.Context{
		Limit:     rate.Limit,
		Remaining: r.Remaining,
		Reset:     windowEnd(sent, r.ResetAfter),
		Reached:   !r.Allowed,
	}, nil
}

// windowEnd is the end of the window in Unix seconds, from the time the
// call was sent and the script's wait until the end (ms, rounded up, from
// the server's clock, which read its TIME after sent). sent + wait - 1 ms
// is before the end by less than the call's latency plus 1 ms, so
// rounding it up to a second gives the end exactly when it is a whole
// second, as it is for every whole-second Period (ulule's "S", "M", "H",
// "D"). Without anything counted the wait is 0 and this is now.
func windowEnd(sent time.Time, wait time.Duration) int64 {
	if wait == 0 {
		return unixCeil(sent)
	}
	return unixCeil(sent.Add(wait - time.Millisecond))
}

func checkRate(rate limiter.Rate) error {
	switch {
	case rate.Limit < 0 || rate.Limit > 1e9:
		return fmt.Errorf("%w: Limit %d is not from 0 to 1e9", ErrRate, rate.Limit)
	case rate.Period < time.Millisecond || rate.Period > 1e11*time.Millisecond || rate.Period%time.Millisecond != 0:
		return fmt.Errorf("%w: Period %v is not a whole number of milliseconds from 1 ms to 1e11 ms", ErrRate, rate.Period)
	}
	return nil
}

// unixCeil is t in Unix seconds, rounded up: a client that waits until
// Reset never comes back before the window has ended.
func unixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
