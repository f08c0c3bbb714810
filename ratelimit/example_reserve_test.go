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

// LLM tokens per minute and requests per day for each API key, together:
// the day counts a request as 1 whatever its tokens, so each limit
// reserves its own cost, and a request the tokens deny gives its day's
// request back. (Atomic counts one cost in every limit.)
func Example_llmTokens() {
	rdb := exampleRedis()
	ctx := context.Background()
	tokens, _ := ratelimit.New(rdb, "tokens", ratelimit.PerMinute(10_000))
	requests, _ := ratelimit.New(rdb, "requests", ratelimit.Per(1_000, 24*time.Hour))
	complete := func(key string, maxTokens int64) string {
		req, err := requests.Reserve(ctx, key, 1)
		if err != nil {
			return "503: " + err.Error()
		}
		if !req.Decision.Allowed {
			return fmt.Sprintf("429: try again in %v", req.Decision.RetryAfter)
		}
		tok, err := tokens.Reserve(ctx, key, maxTokens)
		if err != nil || !tok.Decision.Allowed {
			_ = req.Cancel(ctx) // no tokens, no request
			if err != nil {
				return "503: " + err.Error()
			}
			return fmt.Sprintf("429: try again in %v", tok.Decision.RetryAfter)
		}
		used := maxTokens / 4 // ... the model answers; its usage says how many tokens
		if err := tok.Settle(ctx, used); err != nil {
			return "settle: " + err.Error()
		}
		return fmt.Sprint("200: used ", used)
	}
	fmt.Println(complete("api-key-1", 8_000))
	fmt.Println(complete("api-key-1", 9_000))
	d, _ := requests.Peek(ctx, "api-key-1")
	fmt.Println(d.Remaining, "requests left today")
	// Output:
	// 200: used 2000
	// 429: try again in 6s
	// 999 requests left today
}
