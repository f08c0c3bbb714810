package redis_rate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	// Linked so the check finds the version go.mod pins.
	_ "github.com/go-redis/redis_rate/v10"

	"github.com/redlimit/redlimit/internal/peercopy"
)

// TestExampleIsRedisRates holds example.go to redis_rate's example_test.go
// with only the import path changed; go test builds example.go, the
// example against this module, to run it.
func TestExampleIsRedisRates(t *testing.T) {
	ids := peercopy.Check(t, "example.go", "github.com/go-redis/redis_rate/v10", "example_test.go")
	if diff := cmp.Diff([]string(nil), ids); diff != "" {
		t.Errorf("deliberate differences in the example (-want +got):\n%s", diff)
	}
}
