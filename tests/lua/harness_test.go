package luatest

import (
	"strings"
	"testing"
)

// The stand-in must refuse what Redis refuses, or the scenarios prove less
// than they claim.
func TestHarnessIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"global assignment", "x = 1", "Attempt to modify a readonly table"},
		{"global read", "return y", "nonexistent global variable"},
		{"unknown command", "return redis.call('KEYS', '*')", "not a command the bundled scripts may use"},
		{"number argument", "return redis.call('PEXPIRE', KEYS[1], 10)", "is a number, not a string"},
		{"zero TTL", "redis.call('HSET', KEYS[1], 'a', '1') return redis.call('PEXPIRE', KEYS[1], '0')", "TTL must be positive"},
		{"fractional TTL", "redis.call('HSET', KEYS[1], 'a', '1') return redis.call('PEXPIRE', KEYS[1], '1.5')", "ERR value is not an integer"},
		{"no os library", "return os.time()", "nonexistent global variable 'os'"},
		{"no loadstring", "return loadstring('return 1')", "nonexistent global variable 'loadstring'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(0).Eval(tc.src, []string{"k"}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got (%v, %v), want an error containing %q", got, err, tc.want)
			}
		})
	}
}

func TestHarnessReplies(t *testing.T) {
	r := New(1_500_000)
	got, err := r.Eval("return {3.99, -2.7, true, false, 'x', nil, 5}", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(3), int64(-2), int64(1), nil, "x"}
	if len(got.([]any)) != len(want) {
		t.Fatalf("got %v, want %v (a nil ends the array)", got, want)
	}
	for i := range want {
		if got.([]any)[i] != want[i] {
			t.Errorf("element %d: got %v, want %v", i, got.([]any)[i], want[i])
		}
	}
	if got, _ := r.Eval("return redis.call('TIME')", nil, nil); got.([]any)[0] != "1" || got.([]any)[1] != "500000" {
		t.Errorf("TIME = %v, want [1 500000]", got)
	}
}
