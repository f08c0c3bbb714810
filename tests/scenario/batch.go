package scenario

import "time"

// The batch scripts' own promise: a call of several requests answers each
// as the same requests sent one call each at that instant would be, writes
// once, and a request past its deadline (the last one's, here) counts
// nothing. tests/lua checks the promise call for call against the
// requests sent one by one (TestBatchIsItsCallsInARow); these tables pin
// the answers on every tier.
func init() {
	sec := time.Second
	// requests is the rest of a batch step's Args: the costs, each but the
	// last followed by a deadline of 0 (the last one's is the step's).
	requests := func(costs ...int) []any {
		var out []any
		for i, c := range costs {
			if i > 0 {
				out = append(out, 0)
			}
			out = append(out, c)
		}
		return out
	}
	g := func(take string, costs ...int) []string {
		return Args(append([]any{5, 10, 1000, take}, requests(costs...)...)...)
	}
	register(Spec{Script: "gcra"},
		Scenario{
			Name: "a batch is its requests in a row",
			Keys: []string{"gcra:{batch}"},
			// T = 100 ms, burst 5.
			Steps: []Step{
				{Args: g("all", 2, 2, 2, 0, 1, 6), Want: Batch(
					R(true, 3, 0, 200), R(true, 1, 0, 400),
					// 2 do not fit, and change nothing: a peek and 1 still pass.
					R(false, 1, 100, 400), R(true, 1, 0, 400), R(true, 0, 0, 500),
					// Above burst: never.
					R(false, 0, -1, 500)),
					TTL: []int64{500}},
				{Args: g("all", 1), Want: R(false, 0, 100, 500), TTL: []int64{500}},
				// The last request's deadline has passed: it alone counts nothing.
				{At: 100 * time.Millisecond, Args: g("all", 1, 1), DeadlineIn: -sec, Want: Batch(R(true, 0, 0, 500), X()), TTL: []int64{500}},
				{At: 100 * time.Millisecond, Args: g("all", 0, 0), Want: Batch(R(false, 0, 100, 500), R(false, 0, 100, 500)), TTL: []int64{500}},
				// Every request expired: nothing is read or written.
				{At: 200 * time.Millisecond, Args: g("all", 1), DeadlineIn: -sec, Want: X(), TTL: []int64{400}},
			},
		},
		Scenario{
			Name: "a batch at_most takes what is left, request by request",
			Keys: []string{"gcra:{batchmost}"},
			Steps: []Step{
				{Args: g("at_most", 3, 3, 0, 1), Want: Batch(
					[]int64{3, 2, 0, 300}, []int64{2, 0, 0, 500},
					[]int64{0, 0, 100, 500}, []int64{0, 0, 100, 500}),
					TTL: []int64{500}},
				{At: 250 * time.Millisecond, Args: g("at_most", 0, 5), Want: Batch([]int64{0, 2, 0, 250}, []int64{2, 0, 0, 450}), TTL: []int64{450}},
			},
		},
		Scenario{
			Name: "64 requests at most",
			Keys: []string{"gcra:{batch64}"},
			Steps: []Step{
				{Args: g("all", make([]int, 64)...), Want: Batch(repeat(R(true, 5, 0, 0), 64)...), TTL: []int64{NoKey}},
				{Args: g("all", make([]int, 65)...), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 135"},
			},
		},
	)
	// Many keys: request i on key i, each as its own call; an error at one
	// key writes nothing at any.
	register(Spec{Script: "gcra"},
		Scenario{
			Name: "many keys are their calls",
			Keys: []string{"gcra:{many}a", "gcra:{many}b", "gcra:{many}c"},
			Steps: []Step{
				{Args: g("all", 2, 5, 6), Want: Batch(R(true, 3, 0, 200), R(true, 0, 0, 500), R(false, 5, -1, 0)),
					TTL: []int64{200, 500, NoKey}},
				// The last request's deadline has passed: its key is not read.
				{At: 100 * time.Millisecond, Args: g("all", 1, 1, 1), DeadlineIn: -sec, Want: Batch(R(true, 3, 0, 200), R(true, 0, 0, 500), X()),
					TTL: []int64{200, 500, NoKey}},
				{At: 100 * time.Millisecond, Args: g("all", 1, 1), Err: "BADARG takes 2 to 64 keys and 5 arguments, then one request of 2 (cost, deadline) per key, got 3 and 9"},
			},
		},
		Scenario{
			Name:    "an error at one key of many writes nothing",
			Keys:    []string{"gcra:{manybad}a", "gcra:{manybad}b"},
			Strings: map[string]string{"gcra:{manybad}b": "x"},
			Steps: []Step{
				{Args: g("all", 1, 1), Err: "BADSTATE", TTL: []int64{NoKey, -1}},
			},
		},
		Scenario{
			Name: "many keys, each once",
			Keys: []string{"gcra:{twice}", "gcra:{twice}"},
			Steps: []Step{
				{Args: g("all", 1, 1), Err: "BADARG keys 1 and 2 are the same key", TTL: []int64{NoKey, NoKey}},
			},
		},
	)
	tb := func(refill string, costs ...int) []string {
		return Args(append([]any{3, 1, 1000, refill}, requests(costs...)...)...)
	}
	register(Spec{Script: "token_bucket"},
		Scenario{
			Name: "a batch is its requests in a row",
			Keys: []string{"tb:{batch}"},
			Steps: []Step{
				{Args: tb("smooth", 1, 1, 0, 4, 1, 1), Want: Batch(
					R(true, 2, 0, 1000), R(true, 1, 0, 2000), R(true, 1, 0, 2000),
					R(false, 1, -1, 2000), R(true, 0, 0, 3000), R(false, 0, 1000, 3000)),
					TTL: []int64{3000}},
				{At: 1500 * time.Millisecond, Args: tb("smooth", 1, 1), DeadlineIn: -sec, Want: Batch(R(true, 0, 0, 2500), X()), TTL: []int64{2500}},
				{At: 1500 * time.Millisecond, Args: tb("interval", 1), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				{At: 2 * sec, Args: tb("interval", 1, 1), Want: Batch(R(true, 0, 0, 3000), R(false, 0, 1000, 3000)), TTL: []int64{3000}},
				{Args: tb("smooth", make([]int, 65)...), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 135"},
			},
		},
		Scenario{
			Name: "many keys are their calls",
			Keys: []string{"tb:{many}a", "tb:{many}b"},
			Steps: []Step{
				{Args: tb("smooth", 1, 3), Want: Batch(R(true, 2, 0, 1000), R(true, 0, 0, 3000)), TTL: []int64{1000, 3000}},
				// The last request's deadline has passed: its key is not read.
				{At: 1500 * time.Millisecond, Args: tb("smooth", 1, 1), DeadlineIn: -sec, Want: Batch(R(true, 2, 0, 1000), X()), TTL: []int64{1000, 1500}},
			},
		},
		Scenario{
			Name:    "an error at one key of many writes nothing",
			Keys:    []string{"tb:{manybad}a", "tb:{manybad}b"},
			Strings: map[string]string{"tb:{manybad}b": "x"},
			Steps: []Step{
				{Args: tb("smooth", 1, 1), Err: "BADSTATE", TTL: []int64{NoKey, -1}},
			},
		},
	)
}

// repeat is n copies of reply r.
func repeat(r []int64, n int) [][]int64 {
	out := make([][]int64, n)
	for i := range out {
		out[i] = r
	}
	return out
}
