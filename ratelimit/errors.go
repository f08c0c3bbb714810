package ratelimit

import "github.com/redlimit/redlimit/ratelimit/internal/call"

// The errors of this package and its subpackages; match them with
// errors.Is. A script's own answer about foreign data under a key is
// returned as bindings.ErrWrongType or bindings.ErrBadState.
var (
	// ErrInvalid: a bug or a misconfiguration, refused before Redis or by
	// the script's argument checks (a bad limit, option, cost, key or
	// caller clock). No fallback decides over it.
	ErrInvalid = call.ErrInvalid
	// ErrUnavailable: Redis failed, refused the call or did not answer
	// within the limiter's timeout. It is what a fallback decides over.
	ErrUnavailable = call.ErrUnavailable
)
