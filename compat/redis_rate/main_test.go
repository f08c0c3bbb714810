package redis_rate_test

import (
	"os"
	"testing"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// redisAddr is the real redis-server every test of the package shares:
// redis_rate's own suite takes its client from a helper with no
// *testing.T, so TestMain starts the server. Each of redis_rate's tests
// flushes it first; the package's tests do not run in parallel.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(redisserver.Main(m, &redisAddr))
}
