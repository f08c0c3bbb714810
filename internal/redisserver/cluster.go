package redisserver

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
)

// Cluster starts a Redis Cluster of n masters without replicas, each a
// redis-server under dir on a free loopback port, and returns their
// addresses once every node reports cluster_state:ok. stop kills them;
// on an error nothing is left running. It needs redis-server and
// redis-cli on PATH.
func Cluster(dir string, n int) (addrs []string, stop func(), err error) {
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	for i := 0; i < n; i++ {
		port, err := freePortPair()
		if err != nil {
			stop()
			return nil, nil, err
		}
		d := filepath.Join(dir, fmt.Sprintf("cluster%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			stop()
			return nil, nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		cmd, err := launch(addr, d, []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"})
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("starting a cluster node: %w", err)
		}
		procs = append(procs, cmd)
		addrs = append(addrs, addr)
	}
	if err := createCluster(addrs); err != nil {
		stop()
		return nil, nil, fmt.Errorf("creating the cluster: %w", err)
	}
	return addrs, stop, nil
}

// NewCluster starts a cluster of three masters for t, skipping or failing
// the test as Start does when redis-server is missing, and stops it when
// the test ends.
func NewCluster(t testing.TB) []string {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			if Required() {
				t.Fatalf("%s is not on PATH, and a real Redis is required here (CI or REDLIMIT_REQUIRE_REDIS=1)", bin)
			}
			t.Skipf("SKIPPED: %s is not on PATH (apt-get install -y redis-server); the cluster part of this test did not run", bin)
		}
	}
	addrs, stop, err := Cluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addrs
}

// freePortPair finds a port whose cluster bus port (port+10000) is free too.
func freePortPair() (int, error) {
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
