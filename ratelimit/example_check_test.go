package ratelimit_test

import (
	"context"
	"fmt"

	"github.com/redlimit/redlimit/ratelimit"
)

// Check at start-up names what in Redis's configuration, or the client's,
// would reset, stop or double-count limits. (miniredis has no CONFIG, so
// here it can only say that; a real server gets every check.)
func ExampleCheck() {
	rdb := exampleRedis()
	findings, err := ratelimit.Check(context.Background(), rdb)
	if err != nil {
		panic(err) // Redis is unreachable
	}
	for _, f := range findings {
		fmt.Println(f.Severity, f.Name)
	}
	// Output:
	// warning config
	// warning retries
}
