package servers

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMatrixServer: under make test-matrix, which sets REDLIMIT_SERVER to
// the name and version of the redis-server first on PATH ("Valkey 8.1.1"),
// the standalone server and every cluster node are that server, so a run
// is never credited to another one.
func TestMatrixServer(t *testing.T) {
	want := os.Getenv("REDLIMIT_SERVER")
	got := serverName(t, standalone(t, 3))
	t.Logf("standalone: %s", got)
	if want != "" && got != want {
		t.Errorf("the standalone server is %s, want %s (REDLIMIT_SERVER)", got, want)
	}
	for _, addr := range clusterAddrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		got := serverName(t, c)
		c.Close()
		if want != "" && got != want {
			t.Errorf("cluster node %s is %s, want %s (REDLIMIT_SERVER)", addr, got, want)
		}
	}
}
