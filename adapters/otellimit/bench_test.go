package otellimit_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redlimit/redlimit/adapters/otellimit"
	"github.com/redlimit/redlimit/ratelimit"
)

// What the hook adds to a decision, Redis aside: go test -bench Hook.
func BenchmarkHook(b *testing.B) {
	hook, err := otellimit.Hook(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		b.Fatal(err)
	}
	e := ratelimit.Event{Name: "api", Key: "user:42", Cost: 1, Decision: ratelimit.Decision{Allowed: true, Name: "api"}, Duration: 300 * time.Microsecond}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		hook(ctx, e)
	}
}
