package servers

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestStatesRedisKeepsAsIntegers: the states whose headers say Redis keeps
// them as an integer (16 bytes, not a string: what their memory per key
// rests on, BENCHMARKS.md) are stored so by a real server; the others are
// short strings.
func TestStatesRedisKeepsAsIntegers(t *testing.T) {
	c := standalone(t, 3)
	ctx := context.Background()
	run := fmt.Sprintf("enc%d:", time.Now().UnixNano())
	for _, tc := range []struct {
		name, script string
		calls        [][]string
		want         string
	}{
		// 100 an hour: 99 tokens (3 digits at most).
		{"token bucket", "token_bucket", [][]string{{"100", "100", "3600000", "0", "smooth", "1", "0"}}, "int"},
		{"token bucket, 4 digits of tokens", "token_bucket", [][]string{{"10000", "10000", "3600000", "0", "smooth", "1", "0"}}, "embstr"},
		{"fixed window", "fixed_window", [][]string{{"100", "3600000", "1", "0", "0"}}, "int"},
		// One request on an idle key: a TAT one interval (36 s) ahead.
		{"gcra, one request", "gcra", [][]string{{"100", "100", "3600000", "0", "all", "1", "0"}}, "int"},
		{"gcra at_most, one request", "gcra", [][]string{{"100", "100", "3600000", "0", "at_most", "5", "0"}}, "embstr"},
		{"gcra at_most, one taken", "gcra", [][]string{{"100", "100", "3600000", "0", "at_most", "1", "0"}}, "int"},
		{"multi, one request", "multi", [][]string{{"1", "0", "0", "100", "100", "3600000"}}, "int"},
		{"gcra, two requests", "gcra", [][]string{{"100", "100", "3600000", "0", "all", "1", "0"}, {"100", "100", "3600000", "0", "all", "1", "0"}}, "embstr"},
		{"gcra, two requests in one call", "gcra", [][]string{{"100", "100", "3600000", "0", "all", "1", "0", "1", "0"}}, "embstr"},
		{"gcra, an interval of 100 s", "gcra", [][]string{{"10", "36", "3600000", "0", "all", "1", "0"}}, "embstr"},
	} {
		key := run + tc.name
		for _, argv := range tc.calls {
			if err := call(ctx, c, tc.script, key, argv); err != nil {
				t.Fatalf("%s %v: %v", tc.name, argv, err)
			}
		}
		got, err := c.ObjectEncoding(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			v, _ := c.Get(ctx, key).Result()
			t.Errorf("%s: %q is kept as %s, want %s", tc.name, v, got, tc.want)
		}
	}
}
