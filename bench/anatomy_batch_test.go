package bench

import "github.com/redlimit/redlimit/bindings"

// batchAnatomyRows are the batch scripts deciding 64 requests in one call,
// as ratelimit's coalescer sends a hot key's requests: on a key they admit
// and on one they deny, each request with a deadline far ahead. TestAnatomy
// reports µs per call, so a decision costs a 64th of the row; and gcra's
// take at_most, redis_rate's AllowAtMost, a batch of one.
func batchAnatomyRows() []anatomyRow {
	const due = 4503599627370496 // 2^52 µs, the latest deadline
	batch := func(cost int, head ...any) []any {
		args := append([]any(nil), head...)
		for range 64 {
			args = append(args, cost, due)
		}
		return args
	}
	return []anatomyRow{
		{"gcra admits, 64 a call", bindings.GCRASource(), batch(1, 1000000000, 1000000, 1000, 0, "all")},
		{"gcra denies, 64 a call", bindings.GCRASource(), batch(1, 100, 100, 1000, 0, "all")},
		{"gcra at_most admits", bindings.GCRASource(), []any{1000000000, 1000000, 1000, 0, "at_most", 3, due}},
		{"token_bucket admits, 64 a call", bindings.TokenBucketSource(), batch(1, 1000000000, 1000000000, 1000, 0, "smooth")},
		{"token_bucket denies, 64 a call", bindings.TokenBucketSource(), batch(1, 100, 100, 1000, 0, "smooth")},
	}
}
