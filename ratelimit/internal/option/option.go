// Package option holds the checks New and the options of every limiter in
// ratelimit and its subpackages make, so that each refuses the same
// things with the same words.
package option

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// Client refuses no client, and a redis.Pipeliner, whose replies arrive
// only at Exec.
func Client(c redis.Scripter) error {
	if c == nil {
		return fmt.Errorf("%w: no Redis client", call.ErrInvalid)
	}
	if _, ok := c.(redis.Pipeliner); ok {
		return fmt.Errorf("%w: a redis.Pipeliner answers only at Exec; pass the client", call.ErrInvalid)
	}
	return nil
}

// Prefix refuses an empty prefix and one with a brace (key.CheckPrefix).
func Prefix(p string) error {
	if err := key.CheckPrefix(p); err != nil {
		return err
	}
	if p == "" {
		return fmt.Errorf("%w: empty prefix", call.ErrInvalid)
	}
	return nil
}

// Timeout refuses a negative timeout.
func Timeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative timeout %v", call.ErrInvalid, d)
	}
	return nil
}

// Fallback refuses a policy that is none (a FailLocal share out of range).
func Fallback(p call.Policy) error {
	if !p.Valid() {
		return fmt.Errorf("%w: fallback %v: a FailLocal share must be above 0 and at most 1, not %g", call.ErrInvalid, p, p.Share)
	}
	return nil
}
