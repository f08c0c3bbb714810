package preflight_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit/preflight"
)

// Check on real servers configured each way names what each configuration
// risks, and nothing else.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	const evil = "#!lua name=evil\nredis.register_function('redlimit_gcra', function(keys, args) return {1, 1, 0, 0} end)"
	tests := []struct {
		name    string
		args    []string // redis-server's
		retries int      // the client's MaxRetries
		setup   func(t *testing.T, c *redis.Client)
		want    []string // "severity name"
	}{
		{"AOF everysec, noeviction", []string{"--appendonly", "yes"}, -1, nil, nil},
		{"no persistence", nil, -1, nil, []string{"warning persistence"}},
		{"RDB only", []string{"--save", "60 1"}, -1, nil, []string{"warning persistence"}},
		{"AOF without fsync", []string{"--appendonly", "yes", "--appendfsync", "no"}, -1, nil, []string{"warning persistence"}},
		{"volatile-lru", []string{"--appendonly", "yes", "--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}, -1, nil, []string{"warning eviction"}},
		{"allkeys-lru", []string{"--appendonly", "yes", "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}, -1, nil, []string{"warning eviction"}},
		{"eviction without maxmemory", []string{"--appendonly", "yes", "--maxmemory-policy", "allkeys-lru"}, -1, nil, nil},
		{"memory full, noeviction", []string{"--appendonly", "yes"}, -1, func(t *testing.T, c *redis.Client) {
			used := infoInt(t, c, "used_memory")
			if err := c.ConfigSet(ctx, "maxmemory", fmt.Sprint(used-used/20)).Err(); err != nil {
				t.Fatal(err)
			}
		}, []string{"critical memory"}},
		{"memory nearly full, allkeys-lru", []string{"--appendonly", "yes", "--maxmemory-policy", "allkeys-lru"}, -1, func(t *testing.T, c *redis.Client) {
			used := infoInt(t, c, "used_memory")
			if err := c.ConfigSet(ctx, "maxmemory", fmt.Sprint(used*100/93)).Err(); err != nil {
				t.Fatal(err)
			}
		}, []string{"warning eviction", "warning memory"}},
		{"default retries", []string{"--appendonly", "yes"}, 0, nil, []string{"warning retries"}},
		{"CONFIG renamed away", []string{"--appendonly", "yes", "--rename-command", "CONFIG", ""}, -1, nil, []string{"warning config"}},
		{"another library owns redlimit_gcra", []string{"--appendonly", "yes"}, -1, func(t *testing.T, c *redis.Client) {
			if err := c.FunctionLoad(ctx, evil).Err(); err != nil {
				t.Fatal(err)
			}
		}, []string{"critical functions"}},
		{"a stale redlimit library", []string{"--appendonly", "yes"}, -1, func(t *testing.T, c *redis.Client) {
			old := strings.Replace(bindings.FunctionsCode(), "\n", "\n-- an older version\n", 1)
			if err := c.FunctionLoad(ctx, old).Err(); err != nil {
				t.Fatal(err)
			}
		}, []string{"critical functions"}},
		{"this version's library", []string{"--appendonly", "yes"}, -1, func(t *testing.T, c *redis.Client) {
			if err := bindings.LoadFunctions(ctx, c); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: redisserver.Start(t, tt.args...), MaxRetries: tt.retries})
			defer c.Close()
			if tt.setup != nil {
				tt.setup(t, c)
			}
			fs, err := preflight.Check(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Severity+" "+f.Name)
				if f.Why == "" || strings.Contains(f.Why, "\n") {
					t.Errorf("%v: want a one-line why", f)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%q", diff, fs)
			}
		})
	}
}

func infoInt(t *testing.T, c *redis.Client, field string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var n int64
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("no %s in INFO", field)
	return 0
}

// Check asks a cluster's masters and a ring's shards at once: every node's
// findings must be there, each time (go test -race in make test catches
// the findings' list shared without a lock even when none is lost).
func TestCheckEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of its own")
	}
	ctx := context.Background()
	cl := redisserver.NewReplicated(t, 3, 0, "--cluster-require-full-coverage", "no")
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	defer cluster.Close()
	shards := map[string]string{}
	for i := 0; i < 3; i++ {
		shards[fmt.Sprint("s", i)] = redisserver.Start(t)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: shards, MaxRetries: -1})
	defer ring.Close()
	for _, tt := range []struct {
		name string
		c    redis.UniversalClient
		want []string
	}{
		{"cluster", cluster, []string{"replicas", "persistence"}},
		{"ring", ring, []string{"persistence"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				fs, err := preflight.Check(ctx, tt.c)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][]string{} // node -> names, as found
				for _, f := range fs {
					got[f.Node] = append(got[f.Node], f.Name)
				}
				if len(got) != 3 {
					t.Fatalf("Check %d: findings of %d nodes, want 3: %q", i, len(got), fs)
				}
				for node, names := range got {
					if diff := cmp.Diff(tt.want, names); diff != "" {
						t.Fatalf("Check %d, %s (-want +got):\n%s", i, node, diff)
					}
				}
				for j := 1; j < len(fs); j++ {
					if fs[j].Node < fs[j-1].Node {
						t.Fatalf("Check %d: findings not ordered by node: %q", i, fs)
					}
				}
			}
		})
	}
}
