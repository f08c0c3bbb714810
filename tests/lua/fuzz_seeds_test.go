package luatest

import (
	"fmt"
	"strings"

	"github.com/redlimit/redlimit/tests/scenario"
)

// fuzzSeed is one starting input of a fuzz target.
type fuzzSeed struct {
	state, calls string
	seed         int64
}

// fuzzSeeds holds, per script, the audit's cases (issue 8) and a few more
// inputs to start the fuzzer from; plain go test runs each of them.
var fuzzSeeds = map[string][]fuzzSeed{}

func init() {
	// line is one call: the server's clock moves by adv µs, then ARGV.
	line := func(adv string, argv ...string) string { return adv + "\t" + strings.Join(argv, "\t") }
	calls := func(lines ...string) string { return strings.Join(lines, "\n") }
	// Per script: a small limit and a large one, as ARGV before cost (a
	// batch script's word last).
	type limits struct{ small, large, other []string }
	all := map[string]limits{
		"token_bucket": {[]string{"10", "5", "1000", "smooth"}, []string{"1000000000", "999999999", "100000000000", "smooth"},
			[]string{"6", "4", "1000", "interval"}},
		"leaky_bucket": {[]string{"10", "5", "1000"}, []string{"9", "999999937", "100000000000"}, []string{"3", "3", "1"}},
		"gcra":         {[]string{"10", "5", "1000", "all"}, []string{"9", "999999937", "100000000000", "all"}, []string{"4", "3", "1", "at_most"}},
		"fixed_window": {[]string{"10", "1000"}, []string{"1000000000", "100000000000"}, []string{"3", "1"}},
		"sliding_window_counter": {[]string{"10", "1000"}, []string{"999999937", "99999999989"},
			[]string{"3", "7"}},
		"sliding_window_log": {[]string{"10", "1000"}, []string{"10000", "1000"}, []string{"3", "1"}},
	}
	t0 := fmt.Sprint(scenario.T0)
	for script, l := range all {
		// with is ARGV: the limit, cost, the clock, a deadline of 0
		// (none), and anything extra; due is with a deadline of its own.
		with := func(lim []string, cost, now string, extra ...string) []string {
			return append(oneCall(script, lim, cost, now, "0"), extra...)
		}
		due := func(lim []string, cost, now, deadline string) []string {
			return oneCall(script, lim, cost, now, deadline)
		}
		s, big := l.small, l.large
		seeds := []fuzzSeed{
			{"", calls(line("0", with(s, "1", "0")...)), 1},
			{"", calls(line("0", with(big, "1", "0")...)), 2},
			{"", calls(line("0", with(l.other, "1", "~0")...)), 3},
			// 1: a caller clock far ahead, then the server's clock.
			{"", calls(line("0", with(s, "10", "4503599627370496")...), line("0", with(s, "1", "0")...)), 4},
			{"", calls(line("0", with(s, "10", "~60000000")...), line("0", with(s, "1", "0")...)), 5},
			{"", calls(line("0", with(s, "10", "~60000001")...), line("0", with(s, "1", "0")...)), 6},
			// 2: a caller clock far behind.
			{"", calls(line("0", with(s, "1", "0")...), line("0", with(s, "1", "1")...)), 7},
			{"", calls(line("0", with(s, "1", "0")...), line("0", with(s, "1", "~-60000000")...), line("1000", with(s, "1", "~-60000000")...)), 8},
			// 5: a late caller and its retry.
			{"", calls(line("0", with(s, "10", "~10000000")...), line("0", with(s, "1", "~9000000")...), line("1000000", with(s, "1", "~9000000")...)), 9},
			// 8: lenient numbers, an extra argument, no key, two keys.
			{"", calls(line("0", with(s, "1e0", "0")...), line("0", with(s, "0x1", "0")...), line("0", with(s, " 1", "0")...),
				line("0", with(s, "1 ", "0")...), line("0", with(s, "+1", "0")...), line("0", with(s, "1\x00junk", "0")...),
				line("0", with(s, "1", "1e-400")...), line("0", with(s, "1", "0", "extra")...), line("0*", with(s, "1", "0")...),
				line("0**", with(s, "1", "0")...), line("0", with(s, "1", "0")...)), 10},
			// 6: foreign data of every type.
			{"hash\tname\talice", calls(line("0", with(s, "1", "0")...), line("0", with(s, "0", "0")...)), 11},
			{"zset\t1\talice\t2\tbob", calls(line("0", with(s, "1", "0")...)), 12},
			{"string\talice", calls(line("0", with(s, "1", "0")...)), 13},
			{"list", calls(line("0", with(s, "1", "0")...)), 14},
			// 7: corrupt state, a hash as the audit had it. The five
			// string-state scripts kept a hash in earlier versions and now
			// answer it WRONGTYPE, as sliding_window_log (a sorted set)
			// always has; TestStateIsCheckedLikeInput spoils their strings.
			{"hash\tn\tnan\tw\t1700000000", calls(line("0", with(s, "1", t0)...), line("0", with(s, "1", t0)...)), 15},
			// Limits that change while the key lives.
			{"", calls(line("0", with(s, "10", "0")...), line("500000", with(big, "1", "0")...), line("0", with(l.other, "1", "0")...),
				line("100000", with(s, "1", "~1000")...)), 16},
			// Issue 15.4: deadlines passed, reached and not yet reached.
			{"", calls(line("0", due(s, "1", "0", "~-1")...), line("0", due(s, "1", "0", "~0")...), line("0", due(s, "1", "0", "~1")...),
				line("0", due(s, "1", "~-1000", "~1000000")...), line("0", due(s, "1", "0", "1")...)), 17},
		}
		fuzzSeeds[script] = append(fuzzSeeds[script], seeds...)
	}
	tb := func(cost, now string) []string {
		return oneCall("token_bucket", []string{"10000000", "9999999", "86400000", "smooth"}, cost, now, "0")
	}
	fuzzSeeds["token_bucket"] = append(fuzzSeeds["token_bucket"],
		// 4: a credit that doubles round up.
		fuzzSeed{"string\t" + scenario.TokenBucketState(scenario.T0-12890000009, 0), calls(line("0", tb("1491898", "0")...), line("0", tb("0", "0")...)), 20},
		fuzzSeed{"", calls(line("0", tb("10000000", "0")...), line("12890000009", tb("1491898", "0")...)), 21},
		fuzzSeed{"", calls(line("0", oneCall("token_bucket", []string{"1000000000", "999999999", "100000000000", "smooth"}, "1000000000", "0", "0")...),
			line("1000000001", oneCall("token_bucket", []string{"1000000000", "999999999", "100000000000", "smooth"}, "10000", "0", "0")...)), 22},
		// Batches: in a row, a request past its deadline among live ones,
		// and the layout of earlier versions (refused).
		fuzzSeed{"", calls(line("0", "10", "5", "1000", "0", "smooth", "4", "0", "4", "0", "4", "0", "0", "0", "1", "~0"),
			line("250000", "10", "5", "1000", "~-1000", "interval", "1", "~1", "11", "0", "2", "0")), 28},
		fuzzSeed{"", calls(line("0", "10", "5", "1000", "smooth", "1", "0", "0"), line("0", "10", "5", "1000", "interval", "0", "0", "0")), 29},
		// The hash of earlier versions, and a state with something after it.
		fuzzSeed{"hash\ttokens\t5\tts\t" + t0 + "\tname\talice", calls(line("0", tb("1", "0")...)), 23},
		fuzzSeed{"string\t-" + t0 + "5/alice", calls(line("0", tb("1", "0")...)), 24},
		fuzzSeed{"string\t-" + t0 + "5", calls(line("0", tb("1", "0")...), line("300000", tb("7", "0")...)), 25},
		// The untagged state of the last version, and a state dated ahead.
		fuzzSeed{"string\t" + t0 + "5", calls(line("0", tb("1", "0")...)), 26},
		fuzzSeed{"string\t" + scenario.TokenBucketState(scenario.T0+60000001, 5), calls(line("0", tb("1", "0")...), line("1", tb("1", "0")...)), 27},
	)
	fuzzSeeds["leaky_bucket"] = append(fuzzSeeds["leaky_bucket"],
		fuzzSeed{"string\tl" + t0 + "200000/200000", calls(line("0", "10", "5", "1000", "1", "0", "0"), line("0", "10", "1", "1000", "1", "0", "0")), 60},
		fuzzSeed{"string\tl" + t0 + "200000/nan", calls(line("0", "10", "5", "1000", "1", "0", "0")), 61},
		fuzzSeed{"string\t" + t0 + "200000/400000", calls(line("0", "10", "5", "1000", "1", "0", "0")), 62},
		fuzzSeed{"string\t" + scenario.GCRAState(scenario.T0+400000, 200000, 400000), calls(line("0", "10", "5", "1000", "1", "0", "0")), 63},
	)
	fuzzSeeds["sliding_window_counter"] = append(fuzzSeeds["sliding_window_counter"],
		fuzzSeed{"string\t" + scenario.SlidingWindowCounterState(scenario.T0/1000, 0, 3, 2), calls(line("0", "10", "1000", "1", "0", "0"), line("700000", "10", "500", "1", "0", "0")), 70},
		fuzzSeed{fmt.Sprintf("string\tc%013d0/3/02", scenario.T0/1000), calls(line("0", "10", "1000", "1", "0", "0")), 71},
		fuzzSeed{fmt.Sprintf("string\t%013d0/3/2", scenario.T0/1000), calls(line("0", "10", "1000", "1", "0", "0")), 72},
	)
	fuzzSeeds["fixed_window"] = append(fuzzSeeds["fixed_window"],
		// 3: a longer window after a shorter one.
		fuzzSeed{"", calls(line("0", "5", "1000", "1", "0", "0"), line("0", "5", "60000", "1", "0", "0"), line("0", "5", "60000", "1", "0", "0"),
			line("0", "5", "60000", "1", "0", "0"), line("0", "5", "60000", "1", "0", "0"), line("0", "5", "60000", "1", "0", "0")), 30},
		// 7: the audit's own corrupt count, in the state as it is now.
		fuzzSeed{fmt.Sprintf("string\t1%013dnan", scenario.T0/1000), calls(line("0", "3", "1000", "1", t0, "0"), line("0", "3", "1000", "1", t0, "0")), 31},
		fuzzSeed{"string\t" + scenario.FixedWindowState(scenario.T0/1000, 2), calls(line("0", "3", "1000", "1", t0, "0"), line("1000000", "3", "60000", "1", "0", "0")), 32},
		// A token bucket's state, which an untagged fixed window read as a count.
		fuzzSeed{"string\t" + scenario.TokenBucketState(scenario.T0, 500), calls(line("0", "3", "1000", "1", "0", "0")), 33},
	)
	fuzzSeeds["sliding_window_log"] = append(fuzzSeeds["sliding_window_log"],
		fuzzSeed{"zset\t1\talice\t" + t0 + "\t" + scenario.LogMember(scenario.T0, 1), calls(line("0", "10", "1000", "1", "0", "0")), 40},
		fuzzSeed{"zset\t" + t0 + "\t" + scenario.LogMember(scenario.T0, 1), calls(line("0", "10", "1000", "10", "0", "0"), line("1", "10", "1000", "1", "0", "0")), 41},
		// The members of the last version, which look like lease ids.
		fuzzSeed{"zset\t" + t0 + "\t" + t0 + "-1", calls(line("0", "10", "1000", "1", "0", "0")), 42},
		// A foreign member that left the window, between two of the log's.
		fuzzSeed{"zset\t1\t1:1\t2\talice\t" + t0 + "\t" + scenario.LogMember(scenario.T0, 1), calls(line("0", "10", "1000", "1", "0", "0")), 43},
	)
	g := func(lim ...string) []string { return oneCall("gcra", append(lim[:3:3], "all"), lim[3], lim[4], lim[5]) }
	fuzzSeeds["gcra"] = append(fuzzSeeds["gcra"],
		fuzzSeed{"string\tg1767225600200000200000/0", calls(line("0", g("10", "5", "1000", "1", "0", "0")...), line("0", g("10", "1", "1000", "1", "0", "0")...)), 50},
		// Batches, take all and at_most, and the layouts of earlier
		// versions, gcra.lua's and gcra_at_most.lua's (refused).
		fuzzSeed{"", calls(line("0", "10", "5", "1000", "0", "all", "4", "0", "4", "0", "4", "0", "0", "0", "11", "0", "1", "~0"),
			line("150000", "10", "5", "1000", "~-1000", "at_most", "3", "~1", "0", "0", "9", "0")), 58},
		fuzzSeed{"string\t" + scenario.GCRAShortState(scenario.T0+200000, 200000), calls(line("0", "10", "5", "1000", "0", "at_most", "1000000000", "0"),
			line("0", "10", "5", "1000", "0", "all", "1", "~-1", "1", "~-1")), 59},
		fuzzSeed{"", calls(line("0", strings.Fields("10 5 1000 1 0 0")...), line("0", strings.Fields("10 5 1000 0 0 0")...)), 60},
		// The layouts of earlier versions, and a leaky bucket's state, which
		// an untagged GCRA read as its own.
		fuzzSeed{"string\t" + t0 + "/200000/" + t0, calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 52},
		fuzzSeed{"string\t" + t0, calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 51},
		fuzzSeed{"string\t1767225600200000200000/200000", calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 53},
		fuzzSeed{"string\t" + scenario.LeakyBucketState(scenario.T0, 200000, 400000), calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 54},
		// The short form, its TAT modulo 1e10, and one dated ahead.
		fuzzSeed{"string\t" + scenario.GCRAShortState(scenario.T0+200000, 200000), calls(line("0", g("10", "5", "1000", "1", "0", "0")...), line("0", g("10", "1", "1000", "1", "0", "0")...)), 55},
		fuzzSeed{"string\t" + scenario.GCRAShortState(scenario.T0+60000001+200000, 200000), calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 56},
		fuzzSeed{"string\t29999999999" + "00200000", calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 57},
		// Reserve, then settle: a refund, a charge into debt, a denial
		// until it drains, a refund from a lagging clock, a charge far
		// past any burst.
		fuzzSeed{"", calls(line("0", "10", "5", "1000", "0", "all", "4", "0"),
			line("1000", "10", "5", "1000", "0", "refund", "3", "0", "2", "0"),
			line("0", "10", "5", "1000", "0", "charge", "30", "0"),
			line("100000", "10", "5", "1000", "0", "all", "1", "0"),
			line("0", "10", "5", "1000", "~-60000000", "refund", "1", "0", "0", "0"),
			line("0", "1", "1", "100000000000", "0", "charge", "1000000000", "0"),
			line("0", "1", "1", "100000000000", "~-60000000", "refund", "1", "0")), 61},
		// The settled form: a lead below one interval, a debt, a debt past
		// its lead, one dated past TIME + 60 s, a leading zero.
		fuzzSeed{"string\t" + scenario.GCRASettledState(scenario.T0+50000, 200000, 50000, 0), calls(line("0", g("10", "5", "1000", "1", "0", "0")...),
			line("0", "10", "5", "1000", "0", "refund", "1", "0")), 62},
		fuzzSeed{"string\t" + scenario.GCRASettledState(scenario.T0+5000000, 200000, 5000000, 3000000), calls(line("0", g("10", "5", "1000", "1", "0", "0")...),
			line("0", g("3", "10", "1000", "0", "0", "0")...), line("0", "10", "5", "1000", "0", "charge", "1", "0")), 63},
		fuzzSeed{"string\t" + scenario.GCRASettledState(scenario.T0+5000000, 200000, 5000000, 5000001), calls(line("0", g("10", "5", "1000", "1", "0", "0")...)), 64},
		fuzzSeed{"string\t" + scenario.GCRASettledState(scenario.T0+60000001+200000, 200000, 200000, 0), calls(line("0", "10", "5", "1000", "0", "refund", "1", "0")), 65},
		fuzzSeed{"string\tg" + t0 + "200000=0200000+0", calls(line("0", "10", "5", "1000", "0", "charge", "1", "0")), 66},
	)
}
