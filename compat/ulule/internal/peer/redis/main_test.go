package redis_test

import (
	"os"
	"testing"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// redisAddr is the real redis-server the package's tests share: ulule's
// store tests take their client from a helper with no *testing.T, so
// TestMain starts the server.
var redisAddr string

func TestMain(m *testing.M) {
	os.Exit(redisserver.Main(m, &redisAddr))
}
