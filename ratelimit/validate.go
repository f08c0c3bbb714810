package ratelimit

// The validate stage: a request the scripts would refuse before looking
// at the key is refused here, and the caller clock is read once for every
// stage below.

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// validate is the validate stage. (The cost is checked before the path, by
// AllowN, so that a bad cost reaches no hook.)
type validate struct {
	clock func() time.Time // WithClock; nil for the server's
	cache cached
}

func (v *validate) decide(ctx context.Context, a ask) (Decision, error) {
	a, err := v.check(a)
	if err != nil {
		return a.none(), err
	}
	return v.cache.decide(ctx, a)
}

// check refuses an empty key and sets a's clock, unless the caller set
// it (Reserve, for a script that settles by the reservation's instant).
func (v *validate) check(a ask) (ask, error) {
	if a.key == "" {
		return a, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if !a.now.IsZero() {
		return a, nil
	}
	now, err := call.Clock(v.clock)
	a.now = now
	return a, err
}
