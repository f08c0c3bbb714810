package rls

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/redlimit/redlimit/internal/redisserver"
)

const differencesConfig = `
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: a_b
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: blocked
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`

// TestReferenceDifferences measures, on the reference itself, each way
// this server answers differently (docs/envoy.md lists them), and checks
// this server's answer.
func TestReferenceDifferences(t *testing.T) {
	addr := redisserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	files := map[string]string{"d.yaml": differencesConfig}
	type pair struct {
		ref  *refServer
		ours *testServer
	}
	start := func(t *testing.T, env map[string]string) pair {
		rdb.FlushAll(context.Background())
		return pair{startReference(t, addr, files, env), startServer(t, addr, files, env)}
	}
	remaining := func(r *rlpb.RateLimitResponse, i int) (rlpb.RateLimitResponse_Code, uint32) {
		return r.Statuses[i].Code, r.Statuses[i].LimitRemaining
	}
	hits := func(n uint64, kv ...string) *rlpb.RateLimitRequest {
		return &rlpb.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{withHits(desc(kv...), n)}}
	}
	guardMinute := func() { // the cases below take far less than 5 s
		if s := time.Now().Second(); s >= 55 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
	}

	t.Run("a denial counts nothing", func(t *testing.T) {
		p := start(t, nil)
		guardMinute()
		for _, s := range []interface {
			call(testing.TB, *rlpb.RateLimitRequest) *rlpb.RateLimitResponse
		}{p.ref, p.ours} {
			s.call(t, req("d", []string{"a", "x"})) // 2 left
		}
		// 5 hits on 2 left: denied by both; the reference counts them.
		rc, rn := remaining(p.ref.call(t, hits(5, "a", "x")), 0)
		oc, on := remaining(p.ours.call(t, hits(5, "a", "x")), 0)
		if rc != over || rn != 0 || oc != over || on != 2 {
			t.Errorf("5 hits on 2 left: the reference %v %d, here %v %d; want OVER_LIMIT 0 there and OVER_LIMIT 2 here", rc, rn, oc, on)
		}
		// So a retry of 1 is denied there, and passes here.
		rc, _ = remaining(p.ref.call(t, req("d", []string{"a", "x"})), 0)
		oc, on = remaining(p.ours.call(t, req("d", []string{"a", "x"})), 0)
		if rc != over || oc != ok || on != 1 {
			t.Errorf("then 1: the reference %v, here %v %d; want OVER_LIMIT there and OK 1 here", rc, oc, on)
		}
	})

	t.Run("a denied request counts in no other descriptor", func(t *testing.T) {
		p := start(t, nil)
		guardMinute()
		both := req("d", []string{"a", "x"}, []string{"blocked", "x"})
		p.ref.call(t, both)
		p.ours.call(t, both)
		_, rn := remaining(p.ref.call(t, req("d", []string{"a", "x"})), 0)
		_, on := remaining(p.ours.call(t, req("d", []string{"a", "x"})), 0)
		if rn != 1 || on != 2 {
			t.Errorf("after a request denied by another descriptor: %d left there, %d here; want 1 (it counted) and 2", rn, on)
		}
	})

	t.Run("a shadow rule over its limit stops the others counting there", func(t *testing.T) {
		p := start(t, map[string]string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true"})
		guardMinute()
		for _, r := range []*rlpb.RateLimitRequest{req("d", []string{"shadow", "x"}), req("d", []string{"a", "x"}, []string{"shadow", "x"})} {
			p.ref.call(t, r)
			p.ours.call(t, r)
		}
		_, rn := remaining(p.ref.call(t, req("d", []string{"a", "x"})), 0)
		_, on := remaining(p.ours.call(t, req("d", []string{"a", "x"})), 0)
		if rn != 2 || on != 1 {
			t.Errorf("a then counted alone: %d left there, %d here; want 2 (the allowed request was not counted) and 1", rn, on)
		}
	})

	t.Run("parts joined with _ share a counter there", func(t *testing.T) {
		p := start(t, nil)
		guardMinute()
		for i := 0; i < 3; i++ {
			p.ref.call(t, req("d", []string{"a", "b_c"}))
			p.ours.call(t, req("d", []string{"a", "b_c"}))
		}
		rc, _ := remaining(p.ref.call(t, req("d", []string{"a_b", "c"})), 0)
		oc, on := remaining(p.ours.call(t, req("d", []string{"a_b", "c"})), 0)
		if rc != over || oc != ok || on != 2 {
			t.Errorf(`("a_b", "c") after 3 of ("a", "b_c"): the reference %v, here %v %d; want OVER_LIMIT there and OK 2 here`, rc, oc, on)
		}
	})

	t.Run("a check of 0 hits at the limit", func(t *testing.T) {
		p := start(t, nil)
		guardMinute()
		for i := 0; i < 3; i++ {
			p.ref.call(t, req("d", []string{"a", "z"}))
			p.ours.call(t, req("d", []string{"a", "z"}))
		}
		rc, _ := remaining(p.ref.call(t, hits(0, "a", "z")), 0)
		oc, _ := remaining(p.ours.call(t, hits(0, "a", "z")), 0)
		if rc != ok || oc != over {
			t.Errorf("0 hits with the limit spent: the reference %v, here %v; want OK there (not over yet) and OVER_LIMIT here (one more would not pass)", rc, oc)
		}
	})

	t.Run("a descriptor with no entries", func(t *testing.T) {
		p := start(t, nil)
		r := &rlpb.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{{}}}
		rr, err := p.ref.client.ShouldRateLimit(context.Background(), r)
		if err != nil || rr.OverallCode != ok {
			t.Errorf("the reference: %v, %v; want OK", rr, err)
		}
		if _, err := p.ours.client.ShouldRateLimit(context.Background(), r); status.Code(err) != codes.InvalidArgument {
			t.Errorf("here: %v, want InvalidArgument", err)
		}
	})

	t.Run("an override of unit UNKNOWN", func(t *testing.T) {
		p := start(t, nil)
		r := &rlpb.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc("a", "x").Entries, Limit: &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_UNKNOWN}}}}
		_, _ = p.ref.client.ShouldRateLimit(context.Background(), r)
		select {
		case <-p.ref.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("the reference still runs 10 s after the override; it crashed in earlier measurements")
		}
		if _, err := p.ours.client.ShouldRateLimit(context.Background(), r); status.Code(err) != codes.InvalidArgument {
			t.Errorf("here: %v, want InvalidArgument", err)
		}
		p.ours.call(t, req("d", []string{"a", "x"}))
	})

	t.Run("an invalid configuration at start", func(t *testing.T) {
		bad := map[string]string{"d.yaml": "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"}
		ref := startReference(t, addr, bad, nil) // waits for /healthcheck 200
		if _, err := ref.client.ShouldRateLimit(context.Background(), req("d", []string{"k", "x"})); err == nil {
			t.Errorf("the reference answered without a configuration")
		}
		ours := startServer(t, addr, bad, map[string]string{"-nowait": ""})
		waitStatus(t, ours, healthpb.HealthCheckResponse_NOT_SERVING, "config: ")
		if _, err := ours.client.ShouldRateLimit(context.Background(), req("d", []string{"k", "x"})); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "invalid rate limit unit 'fortnight'") {
			t.Errorf("here: %v, want UNAVAILABLE naming the refusal", err)
		}
	})

	t.Run("a file that is not YAML in the directory", func(t *testing.T) {
		files := map[string]string{"d.yaml": differencesConfig, "notes.txt": "remember: the limits are per minute\n"}
		ref := startReference(t, addr, files, nil)
		if _, err := ref.client.ShouldRateLimit(context.Background(), req("d", []string{"a", "x"})); err == nil {
			t.Errorf("the reference loaded a directory holding notes.txt")
		}
		ours := startServer(t, addr, files, nil)
		ours.call(t, req("d", []string{"a", "x"}))
		if !strings.Contains(ours.log.String(), "notes.txt") {
			t.Errorf("the log does not name the skipped notes.txt:\n%s", ours.log)
		}
	})

	t.Run("RUNTIME_SUBDIRECTORY unset", func(t *testing.T) {
		ref := startReference(t, addr, files, map[string]string{"RUNTIME_SUBDIRECTORY": "-", "RUNTIME_WATCH_ROOT": "true"})
		for i := 0; i < 5; i++ {
			if r := ref.call(t, req("d", []string{"blocked", "x"})); r.OverallCode != ok {
				t.Fatalf("the reference limited without its configuration: %v", r)
			}
		}
		ours := startServer(t, addr, files, map[string]string{"RUNTIME_SUBDIRECTORY": "", "-nowait": ""})
		waitStatus(t, ours, healthpb.HealthCheckResponse_NOT_SERVING, "config: ")
	})

	t.Run("Redis down at start", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		down := l.Addr().String()
		l.Close()
		ref := launchReference(t, down, files, nil)
		select {
		case <-ref.exited:
		case <-time.After(20 * time.Second):
			t.Errorf("the reference still runs 20 s after starting without Redis")
		}
		ours := startServer(t, down, files, map[string]string{"-nowait": ""})
		waitStatus(t, ours, healthpb.HealthCheckResponse_NOT_SERVING, "redis: Redis does not answer")
		if _, err := ours.client.ShouldRateLimit(context.Background(), req("d", []string{"a", "x"})); status.Code(err) != codes.Unavailable {
			t.Errorf("without Redis: %v, want UNAVAILABLE", err)
		}
	})

	t.Run("TTLs", func(t *testing.T) {
		p := start(t, nil)
		guardMinute()
		p.ref.call(t, req("d", []string{"a", "ttl"}))
		p.ours.call(t, req("d", []string{"a", "ttl"}))
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, "*").Result()
		for _, k := range keys {
			ttl, _ := rdb.PTTL(ctx, k).Result()
			switch {
			case strings.HasPrefix(k, "rls:"):
				if ttl <= 0 || ttl > time.Minute {
					t.Errorf("here %s: TTL %v, want at most the minute", k, ttl)
				}
			case strings.HasPrefix(k, "d_a_ttl_"):
				if ttl <= 0 || ttl > 360*time.Second {
					t.Errorf("the reference's %s: TTL %v, want the minute plus up to 300 s", k, ttl)
				}
			}
		}
		if len(keys) != 2 {
			t.Errorf("keys %q, want one of each server's", keys)
		}
	})
}

// waitStatus waits for the gRPC health status want and a problem that
// starts with problem.
func waitStatus(t *testing.T, ts *testServer, want healthpb.HealthCheckResponse_ServingStatus, problem string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := ts.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: healthServiceName})
		if err == nil && r.Status == want {
			for _, p := range ts.Server.health.problems() {
				if strings.HasPrefix(p, problem) {
					return
				}
			}
		}
	}
	t.Fatalf("no health %v with %q in 10 s: %q", want, problem, ts.Server.health.problems())
}
