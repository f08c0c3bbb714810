package ratelimit

import (
	"errors"
	"fmt"
)

// Errors that New and the Limiter methods return before anything is sent
// to Redis. Match them with errors.Is.
var (
	// ErrInvalidLimit: the Limit means nothing for the algorithm, or is out
	// of the scripts' range (from New, the error is a *LimitError), or
	// NewConcurrency's cap or lease TTL is out of range.
	ErrInvalidLimit = errors.New("ratelimit: invalid limit")
	// ErrInvalidOption: an option of New has a value it cannot take.
	ErrInvalidOption = errors.New("ratelimit: invalid option")
	// ErrInvalidCost: AllowN was asked for fewer than 1 or more than 1e9
	// requests. Use Peek to look without counting.
	ErrInvalidCost = errors.New("ratelimit: invalid cost")
	// ErrInvalidKey: the key is empty. An empty key would put every caller
	// in one shared bucket; name a shared bucket explicitly instead.
	ErrInvalidKey = errors.New("ratelimit: invalid key")
	// ErrClock: the clock given with WithClock returned an instant before
	// the Unix epoch or after 2^52 µs (year 2112), or, as only Redis can
	// tell, more than 60 s from the server's TIME (the scripts refuse such
	// a clock rather than let it lock a key out or stretch its TTL).
	ErrClock = errors.New("ratelimit: clock out of range")
	// ErrTimeout: Redis did not answer within the limiter's timeout. With
	// OnFailure(FailOpen) or OnFailure(FailClosed) it is never returned: it
	// is the Decision's Cause instead.
	ErrTimeout = errors.New("ratelimit: Redis did not answer within the timeout")
)

// A LimitError says why New refused a Limit. It matches ErrInvalidLimit.
type LimitError struct {
	Algorithm Algorithm
	Limit     Limit
	Field     string // "Rate", "Period", "Burst", or "" for a combination
	Reason    string
}

func (e *LimitError) Error() string {
	field := ""
	if e.Field != "" {
		field = e.Field + " "
	}
	return fmt.Sprintf("ratelimit: %s limit {%v}: %s%s", e.Algorithm, e.Limit, field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidLimit) hold.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidLimit }
