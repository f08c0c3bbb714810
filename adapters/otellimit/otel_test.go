package otellimit_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redlimit/redlimit/adapters/otellimit"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
)

// collect reads every data point of the adapter's instruments: the
// counter's values and the histogram's counts by attribute set (rendered
// "k=v,k=v" in order), and the histogram's sums and bucket bounds.
func collect(t *testing.T, reader *sdkmetric.ManualReader) (counts, observed map[string]int64, sums map[string]float64, bounds []float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts, observed, sums = map[string]int64{}, map[string]int64{}, map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otellimit.Scope {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "redlimit.decisions" || m.Unit != "{decision}" || !data.IsMonotonic {
					t.Errorf("counter %s (%s), monotonic %v", m.Name, m.Unit, data.IsMonotonic)
				}
				for _, p := range data.DataPoints {
					counts[render(p.Attributes.ToSlice())] += p.Value
				}
			case metricdata.Histogram[float64]:
				if m.Name != "redlimit.decision.duration" || m.Unit != "s" {
					t.Errorf("histogram %s (%s)", m.Name, m.Unit)
				}
				for _, p := range data.DataPoints {
					a := render(p.Attributes.ToSlice())
					observed[a] += int64(p.Count)
					sums[a] += p.Sum
					bounds = p.Bounds
				}
			default:
				t.Errorf("unexpected instrument %s: %T", m.Name, m.Data)
			}
		}
	}
	return counts, observed, sums, bounds
}

func render(kvs []attribute.KeyValue) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Every kind of decision on a real Redis, and on one that is not there,
// lands in the counter and the histogram under its own attributes.
func TestHook(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	ln.Close()
	defer down.Close()

	reader := sdkmetric.NewManualReader()
	hook, err := otellimit.Hook(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	newL := func(rdb ratelimit.Client, name string, limit ratelimit.Limit, opts ...ratelimit.Option) *ratelimit.Limiter {
		l, err := ratelimit.New(rdb, name, limit, append(opts, ratelimit.WithHook(hook))...)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	api := newL(rdb, "api", ratelimit.PerMinute(2), ratelimit.WithDenyCache(100))
	for i := 0; i < 4; i++ { // 2 allowed, 1 denied by Redis, 1 by the deny cache
		api.Allow(ctx, "k")
	}
	api.Peek(ctx, "other")
	rdb.HSet(ctx, testredis.Key("rl:api:", "hash"), "f", "v") // foreign data under the key
	api.Allow(ctx, "hash")
	guard := newL(rdb, "guard", ratelimit.PerMinute(1), ratelimit.WithLockout(time.Hour))
	guard.Allow(ctx, "k") // allowed by Redis, and starts a lockout
	guard.Allow(ctx, "k") // denied by the lockout
	newL(down, "down", ratelimit.PerMinute(2)).Allow(ctx, "k")
	newL(down, "open", ratelimit.PerMinute(2), ratelimit.WithFallback(ratelimit.FailOpen)).Allow(ctx, "k")
	newL(down, "closed", ratelimit.PerMinute(2), ratelimit.WithFallback(ratelimit.FailClosed)).Allow(ctx, "k")
	local := newL(down, "local", ratelimit.PerMinute(1), ratelimit.WithFallback(ratelimit.FailLocal(1)))
	local.Allow(ctx, "k")
	local.Allow(ctx, "k")

	counts, observed, sums, bounds := collect(t, reader)
	want := map[string]int64{
		"redlimit.limiter=api,redlimit.operation=allow,redlimit.result=allowed,redlimit.source=redis":         2,
		"redlimit.limiter=api,redlimit.operation=allow,redlimit.result=denied,redlimit.source=redis":          1,
		"redlimit.limiter=api,redlimit.operation=allow,redlimit.result=denied,redlimit.source=deny-cache":     1,
		"redlimit.limiter=api,redlimit.operation=peek,redlimit.result=allowed,redlimit.source=redis":          1,
		"redlimit.limiter=guard,redlimit.operation=allow,redlimit.result=allowed,redlimit.source=redis":       1,
		"redlimit.limiter=guard,redlimit.operation=allow,redlimit.result=denied,redlimit.source=lockout":      1,
		"error.type=wrong_type,redlimit.limiter=api,redlimit.operation=allow,redlimit.result=error":           1,
		"error.type=unavailable,redlimit.limiter=down,redlimit.operation=allow,redlimit.result=error":         1,
		"redlimit.limiter=open,redlimit.operation=allow,redlimit.result=allowed,redlimit.source=fail-open":    1,
		"redlimit.limiter=closed,redlimit.operation=allow,redlimit.result=denied,redlimit.source=fail-closed": 1,
		"redlimit.limiter=local,redlimit.operation=allow,redlimit.result=allowed,redlimit.source=fail-local":  1,
		"redlimit.limiter=local,redlimit.operation=allow,redlimit.result=denied,redlimit.source=fail-local":   1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("redlimit.decisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, observed); diff != "" {
		t.Errorf("redlimit.decision.duration counts (-want +got):\n%s", diff)
	}
	// A round trip to Redis takes time; a deny-cache hit takes next to none.
	for a, s := range sums {
		if strings.Contains(a, "source=redis") && s <= 0 {
			t.Errorf("%s: durations sum to %v s", a, s)
		}
	}
	if diff := cmp.Diff([]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}, bounds); diff != "" {
		t.Errorf("bucket bounds (-want +got):\n%s", diff)
	}
}

// A late answer's refund (ratelimit's Event of negative Cost) is counted
// as a refund, not as a decision, and has no duration.
func TestHookRefund(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	hook, err := otellimit.Hook(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	late := ratelimit.Decision{Name: "api", Limit: ratelimit.PerMinute(2), Source: "late-refund"}
	hook(ctx, ratelimit.Event{Name: "api", Key: "k", Cost: -2, Decision: late})
	hook(ctx, ratelimit.Event{Name: "api", Key: "k", Cost: -1, Decision: late, Err: fmt.Errorf("stays counted: %w", ratelimit.ErrUnavailable)})
	counts, observed, _, _ := collect(t, reader)
	want := map[string]int64{
		"redlimit.limiter=api,redlimit.operation=refund,redlimit.result=refunded,redlimit.source=late-refund": 1,
		"error.type=unavailable,redlimit.limiter=api,redlimit.operation=refund,redlimit.result=error":         1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("redlimit.decisions (-want +got):\n%s", diff)
	}
	if len(observed) != 0 {
		t.Errorf("durations recorded for refunds: %v", observed)
	}
}
