package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// A quota by the calendar, 10 000 a month reset on the 1st at 00:00 in
// Berlin, and a usage page: Peek counts nothing, used is the quota less
// Remaining, and it resets at now plus ResetAfter (0 when nothing is used).
func ExampleMonthly() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	// The example's Redis runs at 2026-01-01 00:00 UTC, and the limiter
	// reads that clock too; with a real server, leave WithClock out.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api, err := ratelimit.New(exampleRedis(), "api", ratelimit.Monthly(10000, berlin),
		ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := api.AllowN(ctx, "customer-42", 1500); err != nil {
		panic(err)
	}

	d, err := api.Peek(ctx, "customer-42")
	if err != nil {
		panic(err)
	}
	fmt.Printf("used %d of %d, %d left, resets at %s\n", d.Limit.Rate-d.Remaining, d.Limit.Rate, d.Remaining,
		now.Add(d.ResetAfter).In(berlin).Format(time.RFC3339))
	// Output: used 1500 of 10000, 8500 left, resets at 2026-02-01T00:00:00+01:00
}

// A daily quota in the customer's time zone and a rate beside it: the
// quota's day in New York ends at its midnight there, 5 hours after UTC's.
func ExampleDaily() {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // 19:00 in New York
	daily, err := ratelimit.New(exampleRedis(), "daily", ratelimit.Daily(1000, ny),
		ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	d, err := daily.Allow(context.Background(), "customer-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Allowed, d.Remaining, d.ResetAfter)
	// Output: true 999 5h0m0s
}
