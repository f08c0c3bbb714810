package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// Brute force, exact: at most 5 failed logins per user in 15 minutes.
// Each attempt reserves 1 before the password is checked, so attempts
// that come together cannot all pass; a right password gives it back.
func ExampleLimiter_Reserve() {
	rdb := exampleRedis()
	ctx := context.Background()
	logins, err := ratelimit.New(rdb, "logins", ratelimit.Per(5, 15*time.Minute))
	if err != nil {
		panic(err)
	}
	login := func(user, password string) string {
		r, err := logins.Reserve(ctx, user, 1)
		if err != nil {
			return "503: " + err.Error()
		}
		if !r.Decision.Allowed {
			return fmt.Sprintf("429: try again in %v", r.Decision.RetryAfter)
		}
		if password != "right" {
			return "401" // the reservation stands: a failure counts
		}
		if err := r.Cancel(ctx); err != nil { // a success counts nothing
			return "503: " + err.Error()
		}
		return "200"
	}
	fmt.Println(login("alice", "right"))
	for i := 0; i < 5; i++ {
		login("alice", "wrong")
	}
	fmt.Println(login("alice", "right"))
	// Output:
	// 200
	// 429: try again in 3m0s
}

// LLM tokens: reserve the request's max_tokens, then settle with the usage
// the response reports. A request that used more than it reserved is
// charged the rest, and the key waits for it.
func ExampleReservation_Settle() {
	rdb := exampleRedis()
	ctx := context.Background()
	tokens, err := ratelimit.New(rdb, "tokens", ratelimit.PerMinute(10_000))
	if err != nil {
		panic(err)
	}
	r, err := tokens.Reserve(ctx, "api-key-1", 4_000) // max_tokens
	if err != nil || !r.Decision.Allowed {
		panic(fmt.Sprint(r.Decision, err))
	}
	fmt.Println(r.Decision)
	// ... the model answers, using 1 200 tokens:
	if err := r.Settle(ctx, 1_200); err != nil {
		panic(err)
	}
	d, _ := tokens.Peek(ctx, "api-key-1")
	fmt.Println(d)
	// Output:
	// allowed, 6000 of 10000 left, full in 24s
	// allowed, 8800 of 10000 left, full in 7.2s
}
