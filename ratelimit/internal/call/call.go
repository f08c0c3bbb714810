// Package call holds what every limiter of ratelimit and its subpackages
// does around a script call: the errors it can end in, the timeout that
// bounds it, and which failures a fallback may decide over.
package call

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redlimit/redlimit/bindings"
)

var (
	// ErrInvalid is ratelimit.ErrInvalid.
	ErrInvalid = errors.New("ratelimit: invalid")
	// ErrUnavailable is ratelimit.ErrUnavailable.
	ErrUnavailable = errors.New("ratelimit: Redis unavailable")
)

// MaxClockUs is the latest caller clock the scripts take, in µs since the
// epoch (2^52, in 2112).
const MaxClockUs = int64(1) << 52

// Clock reads now, when there is a caller clock, and checks it.
func Clock(now func() time.Time) (time.Time, error) {
	if now == nil {
		return time.Time{}, nil
	}
	t := now()
	if !t.IsZero() {
		if us := t.UnixMicro(); us <= 0 || us > MaxClockUs {
			return time.Time{}, fmt.Errorf("%w: clock %v is before the Unix epoch or after 2^52 µs", ErrInvalid, t)
		}
	}
	return t, nil
}

// Classify turns what a script call returned into the error a caller gets:
// nil stays nil; ErrInvalid for arguments this layer or the script refused
// (a bug, or a caller clock more than 60 s from the server's TIME, which
// only the server can tell); the error as it is, prefixed, when the script
// answered an error of its own (foreign data under the key: ErrWrongType,
// ErrBadState); the caller's own context error when its context ended
// first (see GaveUp); and ErrUnavailable for everything else, Redis or the
// network failing, which a fallback may decide over.
func Classify(ctx context.Context, err error) error {
	var se *bindings.ScriptError
	var re *bindings.ReplyError
	var ae *bindings.ArgError
	switch {
	case err == nil, errors.Is(err, ErrInvalid):
		return err
	case errors.As(err, &ae), errors.As(err, &se) && se.Code == "BADARG":
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.As(err, &se) && se.Code != "EXPIRED", errors.As(err, &re):
		return fmt.Errorf("ratelimit: %w", err)
	case callerGaveUp(ctx):
		return GaveUp(ctx, err)
	case errors.Is(err, ErrUnavailable):
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// GaveUp is the error of a call whose caller's context ended before it was
// decided: it matches the context's error (context.DeadlineExceeded or
// context.Canceled) and never ErrUnavailable, so that no fallback decides
// over it. err, what the call met meanwhile, is kept as text only.
func GaveUp(ctx context.Context, err error) error {
	cause := ctx.Err()
	if cause == nil {
		cause = context.DeadlineExceeded // the deadline passed a hair before its timer fired
	}
	if err == nil || err == cause {
		return cause
	}
	return fmt.Errorf("ratelimit: %w before Redis decided (%v)", cause, err)
}

// callerGaveUp reports whether the caller's context has ended, or reached
// its deadline: by this process's monotonic clock (a client that heeds
// deadlines can fail a hair before the context's own timer marks it done),
// or by its wall clock, by which Redis's TIME judged the deadline the call
// carried (the two may disagree by a step of the wall clock).
func callerGaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	if !ok {
		return false
	}
	now := time.Now()
	return !now.Before(d) || !now.Round(0).Before(d.Round(0))
}

// Ended reports whether the caller of a call that ran under ctx gave up
// on it, for the guard: a dial or read cut short by a caller's context
// says nothing of the node. Under WithTimeout's context it asks the
// caller's own: the limiter's timeout ending it is Redis's failure to
// answer in time, which is the node's.
func Ended(ctx context.Context) bool {
	if caller, ok := ctx.Value(callerKey{}).(context.Context); ok {
		return callerGaveUp(caller)
	}
	return callerGaveUp(ctx)
}

// callerKey holds, in the context WithTimeout runs a call under, the
// caller's own context.
type callerKey struct{}

// WithTimeout runs f, and when d > 0 returns ErrUnavailable once d has
// passed, whether or not f has returned: a hung server cannot hold a
// decision past its timeout even if the client ignores context deadlines.
func WithTimeout[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		return f(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tctx = context.WithValue(tctx, callerKey{}, ctx)
	type outcome struct {
		r   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := f(tctx)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		if o.err != nil && ctx.Err() == nil && tctx.Err() != nil {
			return o.r, fmt.Errorf("%w: no answer within %v: %v", ErrUnavailable, d, o.err)
		}
		return o.r, o.err
	case <-tctx.Done():
		var zero T
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		return zero, fmt.Errorf("%w: no answer within %v", ErrUnavailable, d)
	}
}

// Outlive runs f, and returns as WithTimeout does: when f returns, when
// ctx ends, or once d has passed (when d > 0). But f's call is not cut when
// its caller stops waiting: leave, called then on the caller's goroutine,
// says whether it is granted a place, to be read up to within longer, and
// gives late, which gets what f returns then, on f's goroutine, so that an
// answer that came too late is still learned (see Left). Without a place
// it is cut, and late still gets what it returns. Nothing of leave's is
// made for a caller that does not leave (its late is a closure that may
// copy much). f's context has ctx's values, not its end, and carries the
// instant its caller stops waiting (Deadline reads it). A ctx that cannot
// end with d <= 0 runs f on the caller's goroutine.
func Outlive[T any](ctx context.Context, d, within time.Duration, f func(context.Context) (T, error), leave func() (late func(r T, err error, kept bool), kept bool)) (T, error) {
	if d <= 0 && ctx.Done() == nil {
		return f(ctx)
	}
	c := &outliving[T]{outlived: outlived{caller: ctx, due: Deadline(ctx), done: make(chan struct{})}}
	var expire <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expire = t.C
		if at := Due(time.Now().Add(d)); c.due.IsZero() || at.Before(c.due) {
			c.due = at
		}
	}
	go func() {
		r, err := f(c)
		c.mu.Lock()
		c.r, c.err, c.returned = r, err, true
		late, kept := c.late, c.kept
		c.end(context.Canceled)
		c.mu.Unlock()
		if late != nil {
			late(r, err, kept)
		}
	}()
	var err error
	select {
	case <-c.done: // f returned: the caller still waits, so its bound has not passed
	case <-ctx.Done():
		err = ctx.Err()
	case <-expire:
		err = fmt.Errorf("%w: no answer within %v", ErrUnavailable, d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.returned { // also an answer that came as the wait ended: keep it
		return c.r, c.err
	}
	if err == nil { // the bound passed first: the caller was descheduled past its due
		if err = ctx.Err(); err == nil {
			err = fmt.Errorf("%w: no answer within %v", ErrUnavailable, d)
		}
	}
	if c.late, c.kept = leave(); !c.kept {
		c.end(context.Canceled)
	} else {
		// The call's own bound: within past the due, or past now when
		// there is none. It is set only now: a caller waits until the due
		// at the most (d's timer, or ctx's deadline), so no call outlives
		// it unbounded, and one that answers in time costs no timer.
		wait := within
		if !c.due.IsZero() {
			wait += time.Until(c.due)
		}
		c.stop = time.AfterFunc(wait, c.expire)
	}
	var zero T
	return zero, err
}

// outliving is Outlive's call: its context, what f returned, and what
// gets it once the caller left (nil while it waits).
type outliving[T any] struct {
	outlived
	r        T
	err      error
	returned bool
	late     func(r T, err error, kept bool)
}

// outlived is the context Outlive runs a call under: the caller's values,
// none of its end, ended when the call returns or its own bound passes.
// mu guards what follows it.
type outlived struct {
	caller context.Context
	due    time.Time // when the caller stops waiting; zero: when it ends
	done   chan struct{}

	mu    sync.Mutex
	cause error // why done was closed
	stop  *time.Timer
	kept  bool // the caller left and a place was granted (leave)
}

// outlivedKey finds an outlived context from its Value.
type outlivedKey struct{}

func (c *outlived) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *outlived) Done() <-chan struct{}       { return c.done }

func (c *outlived) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

func (c *outlived) Value(key any) any {
	switch key.(type) {
	case outlivedKey:
		return c
	case callerKey:
		return c.caller
	}
	return c.caller.Value(key)
}

// end ends the context with cause, once; c.mu is held.
func (c *outlived) end(cause error) {
	if c.cause == nil {
		c.cause = cause
		close(c.done)
	}
	if c.stop != nil {
		c.stop.Stop()
	}
}

// expire ends the context at its bound.
func (c *outlived) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.end(context.DeadlineExceeded)
}

// Left reports whether the caller of a call that ran under ctx has left
// it: its context ended, or the instant it stops waiting passed (ctx's
// deadline; for Outlive's call, the due it carries).
func Left(ctx context.Context) bool {
	o, ok := ctx.Value(outlivedKey{}).(*outlived)
	if !ok {
		return callerGaveUp(ctx)
	}
	if callerGaveUp(o.caller) {
		return true
	}
	return !o.due.IsZero() && past(o.due)
}

// past reports whether due has passed, by this process's monotonic clock
// or by its wall clock, by which Redis's TIME judges it.
func past(due time.Time) bool {
	now := time.Now()
	return !now.Before(due) || !now.Round(0).Before(due.Round(0))
}

// Mode is what a fallback does.
type Mode uint8

const (
	None   Mode = iota // return the error
	Open               // allow
	Closed             // deny
	Local              // decide in this process, at Share of the limit
)

// Policy is the content of a ratelimit.Fallback, which keeps it in an
// unexported field so that it can be compared and printed but not built
// by hand.
type Policy struct {
	Mode  Mode
	Share float64 // for Local: 0 < Share <= 1
}

// Valid reports whether p is a policy: a known mode, and for Local a share
// above 0 and at most 1 (NaN is none).
func (p Policy) Valid() bool {
	return p.Mode <= Local && (p.Mode != Local || p.Share > 0 && p.Share <= 1)
}

// String is the policy's word, the one vocabulary of decisions, hook
// events and metrics: "fail-open", "fail-closed", "fail-local", or "" for
// None, which decides nothing (a Decision's source says who did).
func (p Policy) String() string {
	switch p.Mode {
	case Open:
		return "fail-open"
	case Closed:
		return "fail-closed"
	case Local:
		return "fail-local"
	}
	return ""
}

// PolicyOf reads a ratelimit.Fallback: package ratelimit sets it in its
// init, so that subpackages (inflight) take the same Fallback values as
// New does.
var PolicyOf func(fallback any) Policy

// ClockRefused marks the scripts' refusal of a caller clock more than 60 s
// from the server's TIME as ErrInvalid: only the server can tell, so a
// constructor cannot refuse it, and no fallback may hide a wrong
// clock. The scripts' EXPIRED (a call Redis ran at or after its deadline,
// which changed nothing) is ErrUnavailable when the caller of ctx, the
// call's own context, has given up on this process's clock: an answer that
// came too late, as a timeout whose timer has not fired yet. Otherwise the
// caller still waits although Redis's TIME has passed its deadline: Redis's
// clock runs ahead of this process's, which no fallback may hide
// either (ErrInvalid).
func ClockRefused(ctx context.Context, err error) error {
	return ClockRefusedBy(ctx, time.Time{}, err)
}

// ClockRefusedBy is ClockRefused for a call whose caller also stops
// waiting at due (zero: none), as a request of a batch does: an EXPIRED
// that comes after due came too late, even if the timer that ends the wait
// has not fired yet.
func ClockRefusedBy(ctx context.Context, due time.Time, err error) error {
	if err == nil {
		return nil // before se, which errors.As makes escape: no allocation per decision
	}
	var se *bindings.ScriptError
	switch {
	case !errors.As(err, &se):
	case se.Code == "BADARG" && strings.HasPrefix(se.Message, "now must be 0"):
		return fmt.Errorf("%w: the caller clock is more than 60 s from the server's: %w", ErrInvalid, err)
	case se.Code != "EXPIRED":
	case Left(ctx) || !due.IsZero() && past(due):
		return fmt.Errorf("%w: the answer came after the deadline: %w", ErrUnavailable, err)
	default:
		return fmt.Errorf("%w: Redis ran the call past its deadline by its TIME while this process still waited: its clock is ahead of this one's: %w", ErrInvalid, err)
	}
	return err
}

// Deadline is when ctx's caller stops waiting (its deadline, or a
// limiter's timeout, which WithTimeout runs under one), sent with every
// call that writes: a call Redis runs at or after it answers EXPIRED and
// counts nothing, so a request its caller gave up on (a timeout, a fallback
//
//	that answered meanwhile, go-redis sending it again after a read
//
// timeout, a server that stalled with it queued) never counts. The zero
// time sends none. It is an instant on this process's clock, judged by
// Redis's TIME, so a skew between the two moves it: a clock s ahead of
// Redis's lets a call count up to s after its caller gave up, and one s
// behind refuses calls in the last s before their deadline (ClockRefused
// reports those as ErrInvalid). Keep the clocks in step (NTP holds them
// within milliseconds), as a caller clock needs anyway.
func Deadline(ctx context.Context) time.Time {
	if o, ok := ctx.Value(outlivedKey{}).(*outlived); ok {
		return o.due
	}
	d, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return Due(d)
}

// Due is the deadline d as the scripts take it: one after 2^52 µs (2112)
// is none, one before the epoch is the epoch's first µs, which has passed.
func Due(d time.Time) time.Time {
	switch us := d.UnixMicro(); {
	case us > MaxClockUs:
		return time.Time{}
	case us < 1:
		return time.UnixMicro(1)
	}
	return d
}
