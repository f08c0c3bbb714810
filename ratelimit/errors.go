package ratelimit

import (
	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// The errors of this package and its subpackages. Match them with
// errors.Is; the message says what was wrong.
var (
	// ErrInvalid: something was refused before it reached Redis, or Redis
	// refused its arguments: a limit that means nothing for its algorithm
	// or is out of the scripts' range, an option value, a cost out of 1 to
	// 1e9, an empty key, a caller clock out of range (or, as only Redis can
	// tell, more than 60 s from the server's TIME). No failure policy hides
	// it: it is a bug or a misconfiguration, not an outage.
	ErrInvalid = call.ErrInvalid
	// ErrUnavailable: Redis failed, refused the call (LOADING, OOM, a
	// network error) or did not answer within the limiter's timeout. It is
	// what a failure policy (OnFailure) decides over; with one it is the
	// Decision's Cause instead of an error.
	ErrUnavailable = call.ErrUnavailable
	// ErrWrongType: the Redis key holds another Redis type than the
	// algorithm's state. The key is left alone. Give limiters with
	// different algorithms different names.
	ErrWrongType = bindings.ErrWrongType
	// ErrBadState: the Redis key has the algorithm's type but not its
	// state: another script's state, or data of someone else's. The key is
	// left alone; a limiter never reads or rewrites what it did not write.
	ErrBadState = bindings.ErrBadState
)
