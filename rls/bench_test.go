package rls

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/redlimit/redlimit/internal/child"
	"github.com/redlimit/redlimit/internal/redisserver"
)

// BenchmarkRLS: the reference and this server side by side, each its own
// process on one redis-server, asked by 64 concurrent gRPC clients (a
// connection each): a hot descriptor that is always admitted, 10 000
// distinct ones, three descriptors per request (of 10 000 distinct
// values), and a flood on one descriptor that is over its limit. Besides
// ns/op it reports requests/s, the redis-server's CPU per request (its
// used_cpu_user + used_cpu_sys over the run) and the server process's
// (its utime + stime). Run it with
//
//	cd rls && go test -run '^$' -bench BenchmarkRLS -benchtime 20000x
//
// On a shared machine compare the servers within one run:
// RLS_BENCH_OTHERS="name=path [K=V ...],..." adds other builds of this
// server (an earlier commit's), each with its own environment, to every
// row this server runs.
func BenchmarkRLS(b *testing.B) {
	addr := redisserver.Start(b)
	// The reference refuses the gcra rule (an unknown key): it gets the
	// configuration without it.
	const refConfig = `
domain: bench
descriptors:
  - key: fixed
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: flood
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: multi_a
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: multi_b
    rate_limit: {unit: minute, requests_per_unit: 1000000000}
  - key: multi_c
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
`
	const config = refConfig + `  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 1000000000, algorithm: gcra}
`
	ours := buildOurs(b)
	servers := []struct {
		name string
		env  map[string]string
		bin  string
	}{
		{"reference", nil, referenceBinary(b)},
		{"reference+local-cache", map[string]string{"LOCAL_CACHE_SIZE_IN_BYTES": "1048576"}, referenceBinary(b)},
		{"redlimit", nil, ours},
		{"redlimit+deny-cache", map[string]string{"LOCAL_CACHE_SIZE_IN_BYTES": "2560000"}, ours},
	}
	var others []string
	for _, o := range strings.Split(os.Getenv("RLS_BENCH_OTHERS"), ",") {
		f := strings.Fields(o)
		if len(f) == 0 {
			continue
		}
		name, bin, ok := strings.Cut(f[0], "=")
		if !ok {
			b.Fatalf("RLS_BENCH_OTHERS: %q: want name=path [K=V ...]", o)
		}
		env := map[string]string{}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		servers = append(servers, struct {
			name string
			env  map[string]string
			bin  string
		}{name, env, bin})
		others = append(others, name)
	}
	workloads := []struct {
		name, key string
		distinct  int
		servers   string // which servers run it
	}{
		{"hot/fixed_window", "fixed", 1, "reference redlimit"},
		{"distinct/fixed_window", "fixed", 10000, "reference redlimit"},
		{"hot/gcra", "gcra", 1, "redlimit"},
		{"distinct/gcra", "gcra", 10000, "redlimit"},
		{"multi3/fixed_window", "multi", 10000, "reference redlimit"},
		{"flood", "flood", 1, "reference reference+local-cache redlimit redlimit+deny-cache"},
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for _, w := range workloads {
		for _, s := range servers {
			runs := " " + w.servers + " "
			if strings.Contains(runs, " redlimit ") {
				runs += strings.Join(others, " ") + " "
			}
			if !strings.Contains(runs, " "+s.name+" ") {
				continue
			}
			b.Run(w.name+"/"+s.name, func(b *testing.B) {
				cfg := config
				if strings.HasPrefix(s.name, "reference") {
					cfg = refConfig
				}
				grpcAddr, pid := runServer(b, s.bin, addr, cfg, s.env)
				clients := dial(b, grpcAddr, 64)
				reqs := make([]*rlpb.RateLimitRequest, w.distinct)
				for i := range reqs {
					v := "v" + strconv.Itoa(i)
					if w.key == "multi" { // two units: rules of different periods
						reqs[i] = req("bench", []string{"multi_a", v}, []string{"multi_b", v}, []string{"multi_c", v})
						continue
					}
					reqs[i] = req("bench", []string{w.key, v})
				}
				rdb.FlushAll(context.Background())
				// Warm up: connections, scripts, the flood's denial.
				for i := 0; i < 64; i++ {
					if _, err := clients[i].ShouldRateLimit(context.Background(), reqs[i%len(reqs)]); err != nil {
						b.Fatal(err)
					}
				}
				st0 := redisStats(b, rdb)
				cpu0 := processCPU(b, pid)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for c := 0; c < 64; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							if _, err := clients[c].ShouldRateLimit(context.Background(), reqs[int(i)%len(reqs)]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				st := redisStats(b, rdb)
				cpu := processCPU(b, pid) - cpu0
				per := func(k string) float64 { return (st[k] - st0[k]) / float64(b.N) }
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(per("cpu")*1e6, "redis-µs/req")
				b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "server-µs/req")
				b.ReportMetric(per("total_reads_processed"), "reads/req")
				var cmds []string
				for k := range st {
					if name, ok := strings.CutPrefix(k, "calls:"); ok && per(k) > 0.01 {
						cmds = append(cmds, fmt.Sprintf("%s %.2f/req %.2f µs", name, per(k), (st["usec:"+name]-st0["usec:"+name])/(st[k]-st0[k])))
					}
				}
				sort.Strings(cmds)
				b.Logf("commands: %s", strings.Join(cmds, ", "))
			})
		}
	}
}

// buildOurs builds redlimit-rls into the test's temporary directory.
func buildOurs(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "redlimit-rls")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/redlimit-rls").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runServer runs bin (either server: both read the same environment) on
// Redis at redisAddr with config, and returns its gRPC address and process
// id once it is healthy.
func runServer(b *testing.B, bin, redisAddr, config string, env map[string]string) (string, int) {
	root := b.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, "c.yaml"), config)
	ports := freePorts(b, 3)
	cmd := child.Tie(exec.Command(bin))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr, "RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=ratelimit",
		"RUNTIME_WATCH_ROOT=false", "USE_STATSD=false", "LOG_LEVEL=error", "HOST=127.0.0.1", "GRPC_HOST=127.0.0.1", "DEBUG_HOST=127.0.0.1",
		"PORT=" + ports[0], "GRPC_PORT=" + ports[1], "DEBUG_PORT=" + ports[2]}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	lb := &logBuffer{}
	cmd.Stdout, cmd.Stderr = lb, lb
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rs := &refServer{http: "127.0.0.1:" + ports[0]}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _ := rs.healthcheck(); code == 200 {
			return "127.0.0.1:" + ports[1], cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not become healthy:\n%s", bin, lb)
		}
	}
}

// processCPU is the user + system CPU time process pid has used
// (/proc/<pid>/stat's utime and stime, in clock ticks of 1/100 s: Linux's
// USER_HZ everywhere but on a kernel built otherwise).
func processCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("server CPU: %v", err)
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndex(s, ") ")+2:])
	if len(f) < 13 {
		b.Fatalf("server CPU: short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("server CPU: /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func dial(b *testing.B, addr string, n int) []rlpb.RateLimitServiceClient {
	var cs []rlpb.RateLimitServiceClient
	for i := 0; i < n; i++ {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		cs = append(cs, rlpb.NewRateLimitServiceClient(conn))
	}
	return cs
}

// redisStats are redis-server's counters: "cpu" (user + system, in
// seconds), "calls:<command>" and "usec:<command>" (INFO commandstats: a
// script's usec includes the commands it calls, which count there too),
// and INFO stats' total_reads_processed (reads from clients).
func redisStats(b *testing.B, rdb *redis.Client) map[string]float64 {
	info, err := rdb.Info(context.Background(), "cpu", "commandstats", "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	st := map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, _ := strings.Cut(line, ":")
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			x, _ := strconv.ParseFloat(v, 64)
			st["cpu"] += x
		case k == "total_reads_processed":
			st[k], _ = strconv.ParseFloat(v, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			for _, f := range strings.Split(v, ",") {
				name, x, _ := strings.Cut(f, "=")
				if name == "calls" || name == "usec" {
					st[name+":"+strings.TrimPrefix(k, "cmdstat_")], _ = strconv.ParseFloat(x, 64)
				}
			}
		}
	}
	return st
}
