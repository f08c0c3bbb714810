package luatest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// A reservation is logged at the instant its call was judged at: on an
// empty key, the later of the caller's clock and the server's TIME. A
// caller 5 ms behind TIME logs its first reservation at TIME, and its
// refund at its own clock walks up from there and finds it: the full limit
// comes back. A part refunded leaves the rest at TIME, numbered from 1, so
// a refund at TIME itself takes it. The real servers' tiers cannot put a
// caller behind TIME on an empty key, so this runs here.
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
	server := fmt.Sprint(scenario.T0 + 5000)
	sec := time.Second
	if got, want := call(5, sec, 2, caller, 0), []int64{1, 3, 0, 1005}; !cmp.Equal(got, want) {
		t.Fatalf("reserve 2 behind TIME: %v, want %v", got, want)
	}
	if got, want := call(5, sec, 2, caller, 0, "refund", caller), []int64{1, 5, 0, 0}; !cmp.Equal(got, want) {
		t.Errorf("refund at the caller's clock: %v, want %v", got, want)
	}
	if r.Snapshot().String() != "" {
		t.Errorf("after the refund the key holds %q, want nothing", r.Snapshot().String())
	}
	if got, want := call(5, sec, 3, caller, 0), []int64{1, 2, 0, 1005}; !cmp.Equal(got, want) {
		t.Fatalf("reserve 3 behind TIME: %v, want %v", got, want)
	}
	if got, want := call(5, sec, 2, caller, 0, "refund", caller), []int64{1, 4, 0, 1005}; !cmp.Equal(got, want) {
		t.Errorf("refund 2 of 3 at the caller's clock: %v, want %v", got, want)
	}
	if got, want := r.Snapshot().String(), "log zset exp="; !strings.HasPrefix(got, want) || !strings.Contains(got, server+":1=") || strings.Contains(got, server+":2") {
		t.Errorf("after refunding 2 of 3 the log is %q, want one member %s:1", got, server)
	}
	if got, want := call(5, sec, 1, caller, 0, "refund", server), []int64{1, 5, 0, 0}; !cmp.Equal(got, want) {
		t.Errorf("refund at TIME: %v, want %v", got, want)
	}
}
