package tiers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		os.RemoveAll(dir)
	}
	start := func(name string, extra ...string) (string, error) {
		port, err := freePort()
		if err != nil {
			return "", err
		}
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d}, extra...)
		cmd := exec.Command("redis-server", args...)
		log, err := os.Create(filepath.Join(d, "log"))
		if err != nil {
			return "", err
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return "", err
		}
		procs = append(procs, cmd)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		return addr, waitPing(addr)
	}
	if standaloneAddr == "" {
		if standaloneAddr, err = start("standalone"); err != nil {
			serverProblem = "starting redis-server: " + err.Error()
			return stop
		}
	}
	if clusterAddrs == nil {
		var addrs []string
		for i := 0; i < 3; i++ {
			a, err := start(fmt.Sprintf("cluster%d", i), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
			if err != nil {
				serverProblem = "starting a cluster node: " + err.Error()
				return stop
			}
			addrs = append(addrs, a)
		}
		if err := createCluster(addrs); err != nil {
			serverProblem = "creating the cluster: " + err.Error()
			return stop
		}
		clusterAddrs = addrs
	}
	return stop
}

// freePort finds a port whose cluster bus port (port+10000) is free too.
func freePort() (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			bus.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port pair")
}

func waitPing(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var err error
	for i := 0; i < 100; i++ {
		if err = c.Ping(context.Background()).Err(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer PING: %w", addr, err)
}

func createCluster(addrs []string) error {
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	ctx := context.Background()
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		ok := false
		for i := 0; i < 200 && !ok; i++ {
			info, _ := c.ClusterInfo(ctx).Result()
			sc := bufio.NewScanner(strings.NewReader(info))
			for sc.Scan() {
				ok = ok || strings.TrimSpace(sc.Text()) == "cluster_state:ok"
			}
			if !ok {
				time.Sleep(50 * time.Millisecond)
			}
		}
		c.Close()
		if !ok {
			return fmt.Errorf("%s never reported cluster_state:ok", a)
		}
	}
	return nil
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
