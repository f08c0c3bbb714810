package luatest

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestFixedWindowFormMatchesModel holds fixed_window.lua's form to its
// model (model_window_test.go), call by call, state and TTL included:
// calendar periods of uneven lengths (as a DST day or a month has) and
// epoch windows, crossed by the server's clock and by callers' clocks up
// to 60 s either side of it; takes, refunds and charges whose at lies in
// the current window, an ended one or a later one; changed limits; and
// boundaries that are wrong on purpose now and then (the errors must
// agree too).
func TestFixedWindowFormMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	s := func(v int64) string { return strconv.FormatInt(v, 10) }
	accepted, settled, calls := 0, 0, 0
	for run := 0; run < 200; run++ {
		w := newTwin(t, "fixed_window", scenario.T0)
		server := int64(scenario.T0)
		// The calendar: boundaries in ms from 10 min before T0, each
		// period 3 to 12 minutes long, so that a run crosses several.
		bounds := []int64{scenario.T0/1000 - 600000}
		for len(bounds) < 40 {
			bounds = append(bounds, bounds[len(bounds)-1]+int64(180000+rng.Intn(540000)))
		}
		epoch := rng.Intn(3) == 0
		window := []int64{1000, 7000, 60000, 300000}[rng.Intn(4)]
		limit := int64(1 + rng.Intn(5))
		for i := 0; i < 80; i++ {
			server += int64(rng.Intn(90_000_000))
			w.setTime(server)
			now := int64(0)
			judged := server
			if rng.Intn(2) == 0 {
				now = server + int64(rng.Intn(2*maxSkew+1)) - maxSkew
				judged = now
			}
			if rng.Intn(10) == 0 {
				limit = int64(1 + rng.Intn(5))
			}
			cost := int64(rng.Intn(int(limit) + 3))
			take, at := "all", int64(0)
			switch rng.Intn(5) {
			case 0:
				take = "refund"
			case 1:
				take = "charge"
			}
			if take != "all" {
				// The reservation's instant: now, a while ago (maybe in an
				// ended window), or (rarely) past what the script takes.
				at = judged - int64(rng.Intn(600_000_000))
				if rng.Intn(20) == 0 {
					at = server + maxSkew + 1
				}
				at = max(at, 1)
			}
			argv := []string{s(limit), "0", s(cost), s(now), "0", take, s(at), "0", "0", "0"}
			if epoch {
				argv[1] = s(window)
				if take == "all" && rng.Intn(2) == 0 {
					argv = argv[:5] // the 5 arguments of earlier versions
				}
			} else {
				// The periods around judged less 60 s, as ratelimit sends them.
				k := 0
				for k+1 < len(bounds) && bounds[k+1]*1000 <= judged-maxSkew {
					k++
				}
				if k+2 >= len(bounds) {
					break
				}
				if rng.Intn(25) == 0 {
					k = max(0, k+rng.Intn(3)-1) // wrong periods now and then
				}
				argv[7], argv[8], argv[9] = s(bounds[k]), s(bounds[k+1]), s(bounds[k+2])
			}
			calls++
			if _, err := w.call([]string{"fw:{form}"}, argv); err == nil {
				accepted++
				if take != "all" {
					settled++
				}
			}
		}
	}
	if accepted < 5000 || settled < 1500 {
		t.Fatalf("%d of %d calls accepted, %d settles: the search proves little", accepted, calls, settled)
	}
	t.Logf("%d calls compared, %d accepted, %d settles", calls, accepted, settled)
}
