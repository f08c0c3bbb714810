package call

import (
	"context"
	"errors"
	"testing"
	"time"
)

// slack is how late a timer may fire on a busy machine before a test
// calls it a bound not kept. Timers never fire early, so every lower
// bound below is exact.
const slack = 5 * time.Second

// lateCall is what Outlive's late got, and when.
type lateCall struct {
	err  error
	kept bool
	at   time.Time
}

// blocked is an f that returns only when its context ends, with its
// error, after sending that context on got.
func blocked(got chan<- context.Context) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		got <- ctx
		<-ctx.Done()
		return 0, ctx.Err()
	}
}

// leaving is a leave that grants kept and reports late's call on calls.
func leaving(kept bool, calls chan<- lateCall) func() (func(int, error, bool), bool) {
	return func() (func(int, error, bool), bool) {
		return func(_ int, err error, k bool) {
			calls <- lateCall{err, k, time.Now()}
		}, kept
	}
}

func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(slack):
		t.Fatalf("no %s within %v", what, slack)
		panic("unreachable")
	}
}

// A call answered in time calls nothing of leave's.
func TestOutliveAnsweredInTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Outlive(ctx, time.Minute, time.Minute, func(context.Context) (int, error) { return 7, nil },
		func() (func(int, error, bool), bool) {
			t.Error("leave called for a call answered in time")
			return nil, false
		})
	if r != 7 || err != nil {
		t.Fatalf("Outlive = %d, %v; want 7, nil", r, err)
	}
}

// A call whose caller leaves with a place is read on until within past
// the instant its caller stopped waiting (its due), and no longer: then
// its context ends, and late gets what it returned, kept.
func TestOutliveKeptIsBounded(t *testing.T) {
	const within = 150 * time.Millisecond
	for _, tc := range []struct {
		name string
		d    time.Duration // Outlive's timeout
		ctx  func() (context.Context, context.CancelFunc)
		want error // what the caller gets
		due  bool  // whether the call carries a due
		// the lower bound of the call's end, after its start
		bound time.Duration
	}{
		{"the context's deadline", 0, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, context.DeadlineExceeded, true, 30*time.Millisecond + within},
		{"the timeout", 30 * time.Millisecond, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, ErrUnavailable, true, 30*time.Millisecond + within},
		{"no due: from when the caller left", 0, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled, false, 30*time.Millisecond + within},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now() // before the context: its deadline counts from then
			ctx, cancel := tc.ctx()
			defer cancel()
			got := make(chan context.Context, 1)
			calls := make(chan lateCall, 1)
			_, err := Outlive(ctx, tc.d, within, blocked(got), leaving(true, calls))
			if !errors.Is(err, tc.want) {
				t.Fatalf("the caller got %v, want %v", err, tc.want)
			}
			fctx := wait(t, got, "call")
			if tc.due {
				if due := Deadline(fctx); due.IsZero() || due.Sub(start) > 30*time.Millisecond+time.Second {
					t.Errorf("the call carries the due %v, %v after its start; want about 30ms", due, due.Sub(start))
				}
			} else if due := Deadline(fctx); !due.IsZero() {
				t.Errorf("the call carries a due, %v, with none given", due)
			}
			c := wait(t, calls, "late call")
			if !c.kept || !errors.Is(c.err, context.DeadlineExceeded) {
				t.Errorf("late got (%v, kept %v); want the call's own bound, kept", c.err, c.kept)
			}
			if took := c.at.Sub(start); took < tc.bound || took > tc.bound+slack {
				t.Errorf("the call ended %v after its start; want %v (within past the due), and no later than %v more", took, tc.bound, slack)
			}
		})
	}
}

// A call whose caller leaves without a place is cut at once, and late
// still gets what it returned.
func TestOutliveNotKeptIsCut(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got := make(chan context.Context, 1)
	calls := make(chan lateCall, 1)
	if _, err := Outlive(ctx, 0, time.Hour, blocked(got), leaving(false, calls)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the caller got %v, want %v", err, context.DeadlineExceeded)
	}
	c := wait(t, calls, "late call")
	if c.kept || !errors.Is(c.err, context.Canceled) {
		t.Errorf("late got (%v, kept %v); want context.Canceled, not kept", c.err, c.kept)
	}
	if took := c.at.Sub(start); took > slack {
		t.Errorf("the call ended %v after its start: not cut when its caller left", took)
	}
}
