// Package otellimit records every decision of a limiter in OpenTelemetry
// metrics, through the limiter's hook (ratelimit.WithHook).
//
//	hook, err := otellimit.Hook(nil) // the global MeterProvider
//	if err != nil {
//		log.Fatal(err)
//	}
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100), ratelimit.WithHook(hook))
//
// Two instruments, with attributes of low cardinality (never the key):
//
//   - redlimit.decisions, a counter of decisions ({decision});
//   - redlimit.decision.duration, a histogram of how long each took,
//     round trip included (s), with buckets from 100 µs to 1 s.
//
// Each has redlimit.limiter (the limiter's name), redlimit.operation
// ("allow" for AllowN and Reserve, "peek" for a Peek; a Reservation's
// Settle is not a decision and records none), redlimit.result
// ("allowed", "denied" or "error") and redlimit.source, who decided:
// ratelimit.Decision.Source, "redis", "redis-batch" (coalesced),
// "deny-cache" (WithDenyCache), "lockout" (WithLockout), or the fallback's
// word ("fail-open", "fail-closed", "fail-local").
// A failed decision has error.type instead of a source: "unavailable",
// "invalid", "wrong_type", "bad_state" or "other". A late answer's refund
// (an Event of negative Cost, source "late-refund") counts as operation
// "refund", result "refunded" (or "error" when it stays counted), with no
// duration.
package otellimit

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// Scope is the name of the meter the instruments belong to.
const Scope = "github.com/redlimit/redlimit/adapters/otellimit"

// Hook returns a hook for ratelimit.WithHook that records each decision
// in instruments of mp's meter Scope (the global MeterProvider when mp is
// nil). One hook may serve any number of limiters. It fails only when the
// MeterProvider cannot make the instruments.
func Hook(mp metric.MeterProvider) (func(ctx context.Context, e ratelimit.Event), error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(Scope)
	decisions, err := m.Int64Counter("redlimit.decisions",
		metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions of the rate limiter, by who decided and what."))
	if err != nil {
		return nil, err
	}
	duration, err := m.Float64Histogram("redlimit.decision.duration",
		metric.WithUnit("s"),
		metric.WithDescription("How long a decision of the rate limiter took, round trip to Redis included."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
	if err != nil {
		return nil, err
	}
	r := &recorder{decisions: decisions, duration: duration}
	return r.record, nil
}

type recorder struct {
	decisions metric.Int64Counter
	duration  metric.Float64Histogram
	sets      sync.Map // labels → metric.MeasurementOption, made once per combination
}

// labels are an event's attributes; a few combinations per limiter.
type labels struct {
	limiter, operation, result, source, errType string
}

func (r *recorder) record(ctx context.Context, e ratelimit.Event) {
	l := labelsOf(e)
	opt, ok := r.sets.Load(l)
	if !ok {
		attrs := []attribute.KeyValue{
			attribute.String("redlimit.limiter", l.limiter),
			attribute.String("redlimit.operation", l.operation),
			attribute.String("redlimit.result", l.result),
		}
		if l.errType != "" {
			attrs = append(attrs, attribute.String("error.type", l.errType))
		} else {
			attrs = append(attrs, attribute.String("redlimit.source", l.source))
		}
		opt, _ = r.sets.LoadOrStore(l, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
	o := opt.(metric.MeasurementOption)
	r.decisions.Add(ctx, 1, o)
	if e.Cost >= 0 { // a refund has no duration of its own
		r.duration.Record(ctx, e.Duration.Seconds(), o)
	}
}

func labelsOf(e ratelimit.Event) labels {
	l := labels{limiter: e.Name, operation: "allow", result: "allowed"}
	switch {
	case e.Cost == 0:
		l.operation = "peek"
	case e.Cost < 0:
		l.operation, l.result = "refund", "refunded"
	}
	switch {
	case e.Err != nil:
		l.result = "error"
		l.errType = errType(e.Err)
		return l
	case !e.Decision.Allowed && e.Cost >= 0:
		l.result = "denied"
	}
	l.source = e.Decision.Source
	return l
}

func errType(err error) string {
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ratelimit.ErrInvalid):
		return "invalid"
	case errors.Is(err, bindings.ErrWrongType):
		return "wrong_type"
	case errors.Is(err, bindings.ErrBadState):
		return "bad_state"
	}
	return "other"
}
