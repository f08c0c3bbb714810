package servers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	luatest "github.com/redlimit/redlimit/tests/lua"
)

// TestNoKeyOutlivesItsTTL drives every limiter on short periods, on many
// keys, then waits out the longest reset and SCANs the real server: no key
// may be left behind.
func TestNoKeyOutlivesItsTTL(t *testing.T) {
	c := standalone(t, 3)
	ctx := context.Background()
	prefix := fmt.Sprintf("hygiene:%d:", time.Now().UnixNano())
	longest := time.Duration(0)
	for _, ld := range loads() {
		src, err := luatest.Source(ld.script)
		if err != nil {
			t.Fatal(err)
		}
		script := redis.NewScript(src)
		for k := 0; k < 20; k++ {
			key := fmt.Sprintf("%s{%s}:%d", prefix, ld.script, k)
			for i := 0; i <= k; i++ {
				res, err := script.Run(ctx, c, []string{key}, ld.argv("1", "0")...).Int64Slice()
				if err != nil {
					t.Fatal(err)
				}
				longest = max(longest, time.Duration(res[3])*time.Millisecond)
			}
		}
	}
	if longest == 0 || longest > 2*time.Second {
		t.Fatalf("longest reset_after %v: the loads are meant to reset within 2 s", longest)
	}
	time.Sleep(longest + 100*time.Millisecond)
	var left []string
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		left = append(left, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d keys outlived the longest reset_after (%v), e.g. %q", len(left), longest, left[0])
	}
}
