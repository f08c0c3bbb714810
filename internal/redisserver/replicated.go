package redisserver

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Replicated cluster is a Redis Cluster of the test's own: masters, each
// with its replicas, on free loopback ports, stopped when the test ends.
// Its nodes are Servers, so a test can kill one (Stop) to see its replica
// promoted.
type Replicated struct {
	Masters  []*Server
	Replicas [][]*Server // Replicas[i] replicate Masters[i]
}

// NewReplicated starts masters nodes that share the 16384 slots, and
// replicas replicas of each, and returns once every node reports
// cluster_state:ok and every replica's link to its master is up. extra
// goes to every node (say "--cluster-node-timeout", "2000").
func NewReplicated(t testing.TB, masters, replicas int, extra ...string) *Replicated {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		needServer(t) // fails or skips as for redis-server
		t.Fatal("redis-cli is not on PATH (it comes with redis-server)")
	}
	node := func() *Server {
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}, extra...)
		return newOn(t, clusterAddr(t), args...)
	}
	c := &Replicated{}
	var addrs []string
	for i := 0; i < masters; i++ {
		m := node()
		c.Masters = append(c.Masters, m)
		addrs = append(addrs, m.Addr)
	}
	if err := createCluster(addrs); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range c.Masters {
		mc := redis.NewClient(&redis.Options{Addr: m.Addr})
		id, err := mc.Do(ctx, "cluster", "myid").Text()
		mc.Close()
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(m.Addr)
		var rs []*Server
		for j := 0; j < replicas; j++ {
			r := node()
			rc := redis.NewClient(&redis.Options{Addr: r.Addr})
			if err := rc.ClusterMeet(ctx, host, port).Err(); err != nil {
				t.Fatal(err)
			}
			// CLUSTER REPLICATE needs the node to know the master first.
			waitFor(t, 10*time.Second, r.Addr+" knowing its master", func() bool {
				nodes, _ := rc.ClusterNodes(ctx).Result()
				return strings.Contains(nodes, id)
			})
			if err := rc.ClusterReplicate(ctx, id).Err(); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			rs = append(rs, r)
		}
		c.Replicas = append(c.Replicas, rs)
	}
	for _, n := range c.Nodes() {
		nc := redis.NewClient(&redis.Options{Addr: n.Addr})
		waitFor(t, 20*time.Second, n.Addr+" reporting cluster_state:ok", func() bool {
			info, _ := nc.ClusterInfo(ctx).Result()
			return strings.Contains(info, "cluster_state:ok")
		})
		nc.Close()
	}
	for _, rs := range c.Replicas {
		for _, r := range rs {
			rc := redis.NewClient(&redis.Options{Addr: r.Addr})
			waitFor(t, 20*time.Second, r.Addr+" in sync with its master", func() bool {
				info, _ := rc.Info(ctx, "replication").Result()
				return strings.Contains(info, "master_link_status:up")
			})
			rc.Close()
		}
	}
	return c
}

// Nodes returns every node, masters first.
func (c *Replicated) Nodes() []*Server {
	nodes := append([]*Server(nil), c.Masters...)
	for _, rs := range c.Replicas {
		nodes = append(nodes, rs...)
	}
	return nodes
}

// Addrs returns the masters' addresses, to seed a ClusterClient.
func (c *Replicated) Addrs() []string {
	var addrs []string
	for _, m := range c.Masters {
		addrs = append(addrs, m.Addr)
	}
	return addrs
}

// clusterAddr finds a free loopback port whose cluster bus port is free
// too.
func clusterAddr(t testing.TB) string {
	t.Helper()
	port, err := freePortPair()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// waitFor polls cond every 20 ms until it holds, failing the test after
// limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
