package luatest

import (
	"strconv"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestCallerClockBound: a caller clock exactly 60 s from the server's TIME
// is taken, 1 µs further is BADARG and changes nothing, on both sides, and
// a write with a caller clock keeps its key 60 s past the instant its state
// is spent by the server's clock (reset_after away from the caller's
// clock), so the most a caller may lag still finds the state.
func TestCallerClockBound(t *testing.T) {
	for _, name := range scenario.Scripts() {
		t.Run(name, func(t *testing.T) {
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			r, keys, argv := firstWrite(t, name, src, 0)
			server := r.Now()
			clock := scenario.SpecOf(name).ClockIndex(argv)
			at := func(now int64) []string {
				a := append([]string(nil), argv...)
				a[clock] = strconv.FormatInt(now, 10)
				return a
			}
			// reset_after of the first key: multi answers two numbers
			// before its first limit's three.
			resetAt := 3
			if name == "multi" {
				resetAt = 4
			}
			for _, now := range []int64{server - maxSkew - 1, server + maxSkew + 1, 1, maxTime} {
				expectBadArg(t, r, src, keys, at(now), "BADARG now must be 0 (the server's clock) or within 60000000 µs")
			}
			for _, skew := range []int64{-maxSkew, -maxSkew / 2, 0, maxSkew / 2, maxSkew} {
				c := r.Clone()
				c.data = map[string]*value{} // a fresh key: every script admits
				got, err := c.Eval(src, keys, at(server+skew))
				if err != nil {
					t.Fatalf("skew %d µs: %v", skew, err)
				}
				reply := got.([]any)
				reset := reply[resetAt].(int64)
				if reply[0].(int64) < 1 || reset <= 0 {
					t.Fatalf("skew %d µs: %v, want an admit", skew, reply)
				}
				// spent = own + reset_after (within its ms rounding); the key
				// lives to spent + 60 s by the server's clock.
				want := reset + (skew+maxSkew)/1000
				if got := c.PTTL(keys[0]); got < want-1 || got > want {
					t.Errorf("skew %d µs: reset_after %d ms, PTTL %d ms, want %d (-1)", skew, reset, got, want)
				}
			}
		})
	}
}
