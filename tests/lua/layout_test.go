package luatest

import "github.com/redlimit/redlimit/tests/scenario"

// How a call's ARGV holds its limit, its clock and its requests. Every
// script but two takes one request: the limit, then cost, now and
// deadline. The batch scripts (gcra, token_bucket) take the limit's three
// numbers, now, a word (take, refill), then a cost and a deadline per
// request. The checks that hold for every script read a call through
// callArgs, so they hold for every request of a batch too.

// request is one request of a call, as sent: its cost and its deadline.
type request struct{ cost, deadline string }

// callArgs is a call's ARGV split up: the limit (a batch script's word
// last), the clock and the requests.
type callArgs struct {
	lim  []string
	now  string
	reqs []request
	// settle is a one-request script's settle after the deadline (the
	// word, then the windows' at), nil for none.
	settle []string
}

// isBatch reports whether script decides a batch of requests per call.
func isBatch(script string) bool { return scenario.SpecOf(script).Batch }

// argv is c as script's ARGV.
func (c callArgs) argv(script string) []string {
	if isBatch(script) {
		out := append(append([]string(nil), c.lim[:3]...), c.now, c.lim[3])
		for _, q := range c.reqs {
			out = append(out, q.cost, q.deadline)
		}
		return out
	}
	q := c.reqs[0]
	return append(append(append([]string(nil), c.lim...), q.cost, c.now, q.deadline), c.settle...)
}

// settlesAfter reports whether script takes a settle after its deadline
// (leaky_bucket's word, the windows' word and instant).
func settlesAfter(script string) bool {
	return script == "leaky_bucket" || script == "sliding_window_counter" || script == "sliding_window_log"
}

// splitArgv reads argv as script's ARGV; ok is false when it has not the
// shape of one (too short, a request without its deadline).
func splitArgv(script string, argv []string) (c callArgs, ok bool) {
	if isBatch(script) {
		if len(argv) < 7 || (len(argv)-5)%2 != 0 {
			return callArgs{}, false
		}
		c = callArgs{lim: []string{argv[0], argv[1], argv[2], argv[4]}, now: argv[3]}
		for i := 5; i+1 < len(argv); i += 2 {
			c.reqs = append(c.reqs, request{argv[i], argv[i+1]})
		}
		return c, true
	}
	n := len(argv)
	var settle []string
	if settlesAfter(script) {
		// The settle's word sits after the deadline: the bucket's 7th
		// argument, the windows' 6th (then at).
		i := 6
		if script != "leaky_bucket" {
			i = 5
		}
		if n > i && (argv[i] == "refund" || argv[i] == "charge") {
			settle, n = argv[i:], i
		}
	}
	if n < 3 {
		return callArgs{}, false
	}
	return callArgs{lim: argv[:n-3], now: argv[n-2], reqs: []request{{argv[n-3], argv[n-1]}}, settle: settle}, true
}

// oneCall is the ARGV of one request of script: the limit (a batch
// script's word last), cost, now and deadline, in the script's layout.
var oneCall = scenario.OneCall

// withClock is one request of script from a, its limit and cost as a
// limiter's args give them (a batch script's word before the cost), with
// a clock and a deadline.
func withClock(script string, a []string, now, deadline string) []string {
	return oneCall(script, a[:len(a)-1], a[len(a)-1], now, deadline)
}
