package rls

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A testServer is a Server of the test's own, with a client, its
// configuration directory and its log.
type testServer struct {
	*Server
	client rlpb.RateLimitServiceClient
	health healthpb.HealthClient
	dir    string // RUNTIME_ROOT/ratelimit/config
	log    *logBuffer
}

// startServer starts a server on Redis at redisAddr with the files in
// config (name to YAML) and the extra environment, on free loopback
// ports, and waits until it is healthy unless env["-nowait"] is set.
func startServer(t testing.TB, redisAddr string, config map[string]string, env map[string]string) *testServer {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, yaml := range config {
		writeFile(t, filepath.Join(dir, name), yaml)
	}
	vars := map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redisAddr, "REDIS_TIMEOUT": "2s",
		"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit",
		"HOST": "127.0.0.1", "PORT": "0", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0",
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0",
	}
	wait := true
	for k, v := range env {
		if k == "-nowait" {
			wait = false
			continue
		}
		vars[k] = v
	}
	s, err := LoadSettings(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	lb := &logBuffer{}
	srv, err := Start(context.Background(), s, slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient(srv.Addr("grpc"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ts := &testServer{Server: srv, client: rlpb.NewRateLimitServiceClient(conn), health: healthpb.NewHealthClient(conn), dir: dir, log: lb}
	if wait {
		ts.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	}
	return ts
}

// waitHealth waits up to 10 s for the gRPC health status want.
func (ts *testServer) waitHealth(t testing.TB, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	var got healthpb.HealthCheckResponse_ServingStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := ts.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: healthServiceName})
		if err == nil {
			if got = r.Status; got == want {
				return
			}
		}
	}
	t.Fatalf("health %v after 10 s, want %v; problems %q; log:\n%s", got, want, ts.Server.health.problems(), ts.log)
}

// call asks the server and fails the test on an error.
func (ts *testServer) call(t testing.TB, req *rlpb.RateLimitRequest) *rlpb.RateLimitResponse {
	t.Helper()
	resp, err := ts.client.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", req, err)
	}
	return resp
}

// req builds a request of one descriptor per list of key, value pairs.
func req(domain string, descriptors ...[]string) *rlpb.RateLimitRequest {
	r := &rlpb.RateLimitRequest{Domain: domain}
	for _, kv := range descriptors {
		r.Descriptors = append(r.Descriptors, desc(kv...))
	}
	return r
}

func desc(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func withHits(d *rlcommon.RateLimitDescriptor, n uint64) *rlcommon.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

func miniRedis(t testing.TB) *miniredis.Miniredis {
	t.Helper()
	mr := miniredis.RunT(t)
	return mr
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A logBuffer collects a server's log for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
