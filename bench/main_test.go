package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// addr is the redis-server that TestMain starts for this run: its own
// process on a free loopback port, so INFO commandstats and INFO cpu see
// nothing but the limiters under test.
var addr string

func TestMain(m *testing.M) {
	flag.Parse()
	stop, err := startServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n"+
			"bench: these benchmarks need redis-server on PATH (apt-get install -y redis-server)\n", err)
		os.Exit(1)
	}
	printEnv()
	code := m.Run()
	stop()
	os.Exit(code)
}

// printEnv writes what cmd/benchtable puts beside the tables: when this
// pass ran, how loaded the machine was as it began (other processes share
// the cores with the client and the server), and the versions.
func printEnv() {
	load, _ := os.ReadFile("/proc/loadavg")
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	version := "?"
	if info, err := c.Info(context.Background(), "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				version = v
			}
		}
	}
	fmt.Printf("# bench-env date=%s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("# bench-env loadavg=%s\n", strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	fmt.Printf("# bench-env redis=%s\n", version)
	fmt.Printf("# bench-env go=%s gomaxprocs=%d\n", runtime.Version(), runtime.GOMAXPROCS(0))
}

func startServer() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "redlimit-bench-")
	if err != nil {
		return nil, err
	}
	a, stopServer, err := redisserver.Standalone(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr = a
	return func() { stopServer(); os.RemoveAll(dir) }, nil
}

// expect announces a row the run is about to measure, as a line
// "# bench-expect KIND k=v ..." that cmd/benchtable counts: a row announced
// and never reported fails the tables (a crashed pass, a filtered run)
// instead of leaving a gap or the last run's numbers. The line is one
// write: a log line another goroutine writes meanwhile (go-redis logs a
// pool's connection it closes) must not land inside it, as one did in the
// run of 2026-12-04, 22:13, and made the tables refuse the whole run.
func expect(kind string, kv ...any) {
	line := "# bench-expect " + kind
	for i := 0; i+1 < len(kv); i += 2 {
		line += fmt.Sprintf(" %v=%v", kv[i], kv[i+1])
	}
	fmt.Print(line + "\n")
}

// goroutines is how many callers the parallel benchmarks and the accuracy
// test run at once.
const goroutines = 64

// newClient returns a client of the test server whose pool has a connection
// for each of the 64 callers, and a counter of the commands it sends.
func newClient(tb testing.TB) (*redis.Client, *sentCounter) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: goroutines})
	sent := &sentCounter{}
	c.AddHook(sent)
	tb.Cleanup(func() { c.Close() })
	return c, sent
}

// sentCounter counts, by name, the commands a client sends itself. Redis's
// commandstats also count the commands a script runs (a GET inside EVAL is
// a cmdstat_get call, and its time is already in cmdstat_eval), so only
// the commands the client sent are charged to the limiter, at their
// command's mean cost.
type sentCounter struct {
	counts sync.Map // name -> *atomic.Int64
}

func (s *sentCounter) add(cmd redis.Cmder) { s.count(cmd.Name()) }

// addName counts a command sent by another client than go-redis, for the
// caller of ctx too.
func (s *sentCounter) addName(ctx context.Context, name string) {
	s.count(name)
	if n, ok := ctx.Value(callCounter{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

func (s *sentCounter) count(name string) {
	v, ok := s.counts.Load(name)
	if !ok {
		v, _ = s.counts.LoadOrStore(name, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func (s *sentCounter) reset() { s.counts.Clear() }

func (s *sentCounter) snapshot() map[string]int64 {
	out := map[string]int64{}
	s.counts.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

func (s *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd)
		if n, ok := ctx.Value(callCounter{}).(*atomic.Int64); ok {
			n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// callCounter is the context key of a caller's own count of the commands
// it sent, so that the commands a single decision sends can be told apart
// from other callers' (commands go-redis sends on its own goroutines, as
// the AutoPipeliner does, are not counted there).
type callCounter struct{}

func (s *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.add(cmd)
		}
		return next(ctx, cmds)
	}
}

// serverStats is what the server has spent so far: per command, its calls
// and µs (INFO commandstats), and the process's CPU seconds (INFO cpu,
// user + system, which includes reading and writing the sockets).
type serverStats struct {
	calls, usec map[string]float64
	cpu         float64
}

func readStats(ctx context.Context, c *redis.Client) (serverStats, error) {
	st := serverStats{calls: map[string]float64{}, usec: map[string]float64{}}
	info, err := c.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return st, err
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, _ := strings.Cut(rest, ":")
			for _, f := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(f, "=")
				n, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					st.calls[name] = n
				case "usec":
					st.usec[name] = n
				}
			}
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			n, _ := strconv.ParseFloat(v, 64)
			st.cpu += n
		}
	}
	return st, sc.Err()
}

// serverCost returns the server's µs per decision between two readings:
// cmd is the time in the commands the client sent (each charged at its
// command's mean µs over the interval), cpu is the whole process's CPU,
// which adds the network I/O and the event loop.
func serverCost(before, after serverStats, sent map[string]int64, decisions int) (cmd, cpu float64) {
	for name, n := range sent {
		calls := after.calls[name] - before.calls[name]
		if calls <= 0 {
			continue
		}
		cmd += float64(n) * (after.usec[name] - before.usec[name]) / calls
	}
	cmd /= float64(decisions)
	cpu = (after.cpu - before.cpu) * 1e6 / float64(decisions)
	return cmd, cpu
}

// processCPU is the CPU this process has used so far, user and system, on
// every thread: the benchmark's client side, its goroutines and the
// clients' own.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
