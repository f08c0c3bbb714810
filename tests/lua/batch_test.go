package luatest

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestBatchIsItsCallsInARow holds the batch scripts to their promise, each
// against itself: a call of n requests answers exactly what the same n
// requests sent one call each, at the same instant, answer, and leaves the
// same key, TTL included, after one read and at most one write. The
// requests have random costs (0 peeks, some above the limit, gcra's take
// at_most, refund and charge too), random deadlines (some passed), the server's clock or a
// caller's (up to 60 s off), batches of 1 to 64, limits that change between
// batches, and keys that start empty, with state of every form the script
// writes, another script's state, or foreign data.
func TestBatchIsItsCallsInARow(t *testing.T) {
	for _, script := range []string{"gcra", "token_bucket"} {
		t.Run(script, func(t *testing.T) {
			src, err := Source(script)
			if err != nil {
				t.Fatal(err)
			}
			batches, requests, errors := 0, 0, 0
			for seed := int64(1); seed <= 48; seed++ {
				rng := rand.New(rand.NewSource(seed))
				r := New(scenario.T0)
				if v := batchStates[script][int(seed)%len(batchStates[script])]; v != "" {
					r.data["k"] = fuzzValue(v)
				}
				lims := batchLimits[script]
				lim := lims[rng.Intn(len(lims))]
				for i := 0; i < 30; i++ {
					r.SetTime(r.Now() + rng.Int63n(300_000))
					if rng.Intn(8) == 0 {
						lim = lims[rng.Intn(len(lims))] // the limit changes while the key lives
					}
					c := callArgs{lim: append([]string(nil), lim...), now: "0"}
					if rng.Intn(3) == 0 {
						c.now = strconv.FormatInt(r.Now()+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
					}
					if script == "gcra" {
						// take all, at_most, refund and charge alike.
						c.lim[3] = [...]string{"all", "at_most", "refund", "charge"}[rng.Intn(4)]
					}
					if script == "token_bucket" && rng.Intn(2) == 0 {
						c.lim[3] += [...]string{"_refund", "_charge"}[rng.Intn(2)]
					}
					most, _ := strconv.ParseInt(c.lim[0], 10, 64)
					n := 1 + rng.Intn(8)
					if rng.Intn(10) == 0 {
						n = 64
					}
					for j := 0; j < n; j++ {
						cost := rng.Int63n(most + 3)
						if rng.Intn(3) == 0 {
							cost = rng.Int63n(3)
						}
						if strings.HasSuffix(c.lim[3], "charge") && rng.Intn(40) == 0 {
							cost = 1e9 // a debt as far as a charge takes it
						}
						deadline := "0"
						if rng.Intn(6) == 0 {
							deadline = strconv.FormatInt(r.Now()+rng.Int63n(5)-2, 10)
						}
						c.reqs = append(c.reqs, request{strconv.FormatInt(cost, 10), deadline})
					}
					want, wantErr, seq := oneByOne(t, r, src, c, script)
					before := r.Snapshot()
					got, err := r.Eval(src, []string{"k"}, c.argv(script))
					argv := c.argv(script)
					if !sameReply(err, wantErr) {
						t.Fatalf("seed %d call %d %v: batch says (%v, %v), one by one %v", seed, i, argv, got, err, wantErr)
					}
					if err != nil {
						if !before.Equal(r.Snapshot()) {
							t.Fatalf("seed %d call %d %v: an error changed the key", seed, i, argv)
						}
						errors++
						// A key the script refuses stays refused: start
						// the seed's key afresh.
						delete(r.data, "k")
						continue
					}
					if diff := cmp.Diff(want, ints64(got)); diff != "" {
						t.Fatalf("seed %d call %d %v: (-one by one +batch):\n%s", seed, i, argv, diff)
					}
					if a, b := r.Snapshot(), seq.Snapshot(); !a.Equal(b) {
						t.Fatalf("seed %d call %d %v: key (-one by one +batch):\n%s", seed, i, argv, cmp.Diff(b.String(), a.String()))
					}
					// One read (none when every request expired), at most one write.
					var gets, sets int
					for _, cmd := range r.Commands() {
						switch strings.ToUpper(strings.Fields(cmd)[0]) {
						case "GET":
							gets++
						case "SET":
							sets++
						}
					}
					if gets > 1 || sets > 1 {
						t.Fatalf("seed %d call %d %v: %d GET and %d SET: %v", seed, i, argv, gets, sets, r.Commands())
					}
					batches++
					requests += n
				}
			}
			if batches < 800 || errors < 10 {
				t.Fatalf("%d batches of %d requests, %d errors: the search proves little", batches, requests, errors)
			}
		})
	}
}

// oneByOne sends c's requests one call each on a copy of r, at r's
// instant, and returns their replies joined, the first error, and the copy.
func oneByOne(t *testing.T, r *Redis, src string, c callArgs, script string) ([]int64, error, *Redis) {
	t.Helper()
	seq := r.Clone()
	var out []int64
	for _, q := range c.reqs {
		got, err := seq.Eval(src, []string{"k"}, oneCall(script, c.lim, q.cost, c.now, q.deadline))
		if err != nil {
			return nil, err, seq
		}
		out = append(out, ints64(got)...)
	}
	return out, nil, seq
}

// batchLimits are the limits the batches draw from (a batch script's word
// last): small and large, rates that do not divide their period.
var batchLimits = map[string][][]string{
	"gcra": {{"5", "10", "1000", "all"}, {"3", "1", "1000", "all"}, {"10", "7", "300", "all"}, {"1", "1", "1", "all"},
		{"64", "1000", "1000", "all"}, {"1000000000", "999999937", "100000000000", "all"}},
	"token_bucket": {{"5", "10", "1000", "smooth"}, {"3", "1", "1000", "interval"}, {"10", "7", "300", "smooth"},
		{"1", "1", "1", "interval"}, {"64", "1000", "1000", "smooth"}, {"1000000000", "999999999", "100000000000", "smooth"}},
}

// batchStates are what the key holds before a seed's first batch, in
// fuzzValue's words: nothing, each form of the script's own state (GCRA's
// short, long and settled forms, an interval other than the limits'), another
// script's state, and foreign data.
var batchStates = map[string][]string{
	"gcra": {"",
		"string\t" + scenario.GCRAShortState(scenario.T0+100000, 100000),
		"string\t" + scenario.GCRALongState(scenario.T0+100000, 100000, 100000),
		"string\t" + scenario.GCRALongState(scenario.T0+900000, 300000, 900000),
		"string\t" + scenario.GCRAState(scenario.T0+60000000, 1000000, 61000000),
		// The settled form: a refund's lead below an interval, a charge's debt.
		"string\t" + scenario.GCRASettledState(scenario.T0+50000, 100000, 50000, 0),
		"string\t" + scenario.GCRASettledState(scenario.T0+9000000, 300000, 9000000, 6000000),
		"string\t" + scenario.TokenBucketState(scenario.T0, 3),
		"hash\tname\talice"},
	"token_bucket": {"",
		"string\t" + scenario.TokenBucketState(scenario.T0, 0),
		"string\t" + scenario.TokenBucketState(scenario.T0+30000000, 7),
		// A charge's debt.
		"string\t" + scenario.TokenBucketState(scenario.T0, -12),
		"string\t" + scenario.GCRAShortState(scenario.T0+100000, 100000),
		"zset\t1\talice"},
}
