package otellimit_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redlimit/redlimit/adapters/otellimit"
	"github.com/redlimit/redlimit/ratelimit"
)

// Decisions counted by result: a reader stands in for an exporter.
func Example() {
	rdb := exampleRedis() // redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	reader := sdkmetric.NewManualReader()
	hook, err := otellimit.Hook(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(3), ratelimit.WithHook(hook))
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		limiter.Allow(context.Background(), "user:42")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				result, _ := p.Attributes.Value("redlimit.result")
				fmt.Println(m.Name, result.Emit(), p.Value)
			}
		}
	}
	// Unordered output:
	// redlimit.decisions allowed 3
	// redlimit.decisions denied 2
}

func exampleRedis() *redis.Client {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return redis.NewClient(&redis.Options{Addr: m.Addr()})
}
