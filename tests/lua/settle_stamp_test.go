package luatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// A reservation is logged at the instant its call was judged at: on an
// empty key, the later of the caller's clock and the server's TIME. A
// caller 5 ms behind TIME logs its first reservation at TIME, so its
// refund at its own clock finds nothing there (and gives nothing back),
// while a refund at TIME finds it. The headers say so; the real servers'
// tiers cannot put a caller behind TIME on an empty key, so this runs here.
func TestSettleFindsTheInstantThatCounted(t *testing.T) {
	src, err := Source("sliding_window_log")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0 + 5000)
	call := func(argv ...any) []int64 {
		t.Helper()
		got, err := r.Eval(src, []string{"log"}, scenario.Args(argv...))
		if err != nil {
			t.Fatal(err)
		}
		return ints64(got)
	}
	caller := fmt.Sprint(scenario.T0)
	sec := time.Second
	if got, want := call(5, sec, 2, caller, 0), []int64{1, 3, 0, 1005}; !cmp.Equal(got, want) {
		t.Fatalf("reserve 2 behind TIME: %v, want %v", got, want)
	}
	if got, want := call(5, sec, 2, caller, 0, "refund", caller), []int64{0, 3, 0, 1005}; !cmp.Equal(got, want) {
		t.Errorf("refund at the caller's clock: %v, want %v (nothing there)", got, want)
	}
	if got, want := call(5, sec, 2, caller, 0, "refund", scenario.T0+5000), []int64{1, 5, 0, 0}; !cmp.Equal(got, want) {
		t.Errorf("refund at TIME: %v, want %v", got, want)
	}
}
