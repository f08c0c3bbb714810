package preflight_test

import (
	"context"
	"fmt"

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit/preflight"
)

// Check at start-up names what in Redis's configuration, or the client's,
// would reset, stop or double-count limits. (The examples' miniredis has
// no CONFIG, so here Check can only say that, and its clock is set to a
// fixed day, which Check finds too; a real server gets every check.)
func ExampleCheck() {
	rdb := testredis.Example()
	findings, err := preflight.Check(context.Background(), rdb)
	if err != nil {
		panic(err) // Redis is unreachable
	}
	for _, f := range findings {
		fmt.Println(f.Severity, f.Name)
	}
	// Output:
	// critical clock
	// warning config
	// warning retries
}
