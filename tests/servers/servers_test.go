package servers

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// The real-server tiers need redis-server and redis-cli on PATH. TestMain
// starts a standalone server and a three-master cluster on free loopback
// ports and stops them when the tests end. REDLIMIT_REDIS_ADDR and
// REDLIMIT_CLUSTER_ADDRS (comma-separated) point the tiers at servers that
// are already running instead.
//
// Where the servers cannot be had, the tests that need them say so and skip
// — unless CI is set or REDLIMIT_REQUIRE_REDIS=1, where they fail.
var (
	standaloneAddr string
	clusterAddrs   []string
	serverProblem  string // why the real servers are missing
)

func TestMain(m *testing.M) {
	stop := startServers()
	code := m.Run()
	stop()
	if serverProblem != "" {
		fmt.Fprintf(os.Stderr, "\n*** real Redis tiers did NOT run: %s\n*** install redis-server (apt-get install -y redis-server) or run `make test-redis`\n\n", serverProblem)
	}
	os.Exit(code)
}

func startServers() (stop func()) {
	standaloneAddr = os.Getenv("REDLIMIT_REDIS_ADDR")
	if s := os.Getenv("REDLIMIT_CLUSTER_ADDRS"); s != "" {
		clusterAddrs = strings.Split(s, ",")
	}
	if standaloneAddr != "" && clusterAddrs != nil {
		return func() {}
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		serverProblem = "redis-server is not on PATH"
		return func() {}
	}
	dir, err := os.MkdirTemp("", "redlimit-servers-")
	if err != nil {
		serverProblem = err.Error()
		return func() {}
	}
	stop = func() { os.RemoveAll(dir) }
	if standaloneAddr == "" {
		addr, stopServer, err := redisserver.Standalone(dir)
		if err != nil {
			serverProblem = "starting redis-server: " + err.Error()
			return stop
		}
		standaloneAddr = addr
		stop = func() { stopServer(); os.RemoveAll(dir) }
	}
	if clusterAddrs == nil {
		addrs, stopCluster, err := redisserver.Cluster(dir, 3)
		if err != nil {
			serverProblem = err.Error()
			return stop
		}
		stopStandalone := stop
		stop = func() { stopCluster(); stopStandalone() }
		clusterAddrs = addrs
	}
	return stop
}

// standalone returns a client of the real server, or skips (fails in CI).
func standalone(t testing.TB, protocol int) *redis.Client {
	t.Helper()
	needReal(t)
	c := redis.NewClient(&redis.Options{Addr: standaloneAddr, Protocol: protocol})
	t.Cleanup(func() { c.Close() })
	return c
}

// cluster returns a client of the real cluster, or skips (fails in CI).
func cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	needReal(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs})
	t.Cleanup(func() { c.Close() })
	return c
}

func needReal(t testing.TB) {
	t.Helper()
	if serverProblem == "" && standaloneAddr != "" {
		return
	}
	if redisserver.Required() {
		t.Fatalf("real Redis is required here (CI or REDLIMIT_REQUIRE_REDIS=1) but missing: %s", serverProblem)
	}
	t.Skipf("SKIPPED: real Redis tier not run: %s", serverProblem)
}
