package rls

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/redlimit/redlimit/internal/redisserver"
)

const reloadConfig = "domain: r\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: %s}\n"

func withLimit(n string) string { return strings.Replace(reloadConfig, "%s", n, 1) }

// waitLimit waits until the server answers ("k", "x") with limit n.
func waitLimit(t *testing.T, ts *testServer, n uint32) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r := ts.call(t, &rlpb.RateLimitRequest{Domain: "r", Descriptors: []*rlcommon.RateLimitDescriptor{withHits(desc("k", "x"), 0)}})
		if r.Statuses[0].CurrentLimit.GetRequestsPerUnit() == n {
			return
		}
	}
	t.Fatalf("the limit did not become %d in 15 s; log:\n%s", n, ts.log)
}

func TestReload(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"r.yaml": withLimit("5")}, map[string]string{"USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": "127.0.0.1:0"})
	waitLimit(t, ts, 5)
	ts.call(t, req("r", []string{"k", "x"}))
	writeFile(t, filepath.Join(ts.dir, "r.yaml"), withLimit("7"))
	waitLimit(t, ts, 7)
	// The count carried over: 1 of 7 spent.
	if r := ts.call(t, req("r", []string{"k", "x"})); r.Statuses[0].LimitRemaining != 5 {
		t.Errorf("after the reload: %v, want 5 remaining", r)
	}
	// A bad reload keeps the old configuration serving, and says why.
	writeFile(t, filepath.Join(ts.dir, "r.yaml"), withLimit("7")+"  - key: k\n")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(ts.log.String(), "duplicate descriptor composite key 'r.k'"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the refusal is not in the log:\n%s", ts.log)
		}
	}
	if !strings.Contains(ts.log.String(), "r.yaml:5: duplicate descriptor composite key") {
		t.Errorf("the refusal does not name the file and line:\n%s", ts.log)
	}
	waitLimit(t, ts, 7)
	ts.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	metrics := get(t, "http://"+ts.Addr("prometheus")+"/metrics")
	for _, want := range []string{"ratelimit_service_config_load_error 1", "ratelimit_service_config_load_success 2", `ratelimit_service_rate_limit_total_hits{domain="r",key1="k",key2=""} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	// A new file is read; a good file after the bad one loads.
	writeFile(t, filepath.Join(ts.dir, "r.yaml"), withLimit("9"))
	writeFile(t, filepath.Join(ts.dir, "s.yaml"), "domain: s\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n")
	waitLimit(t, ts, 9)
	for deadline := time.Now().Add(15 * time.Second); ts.call(t, req("s", []string{"k", "x"})).Statuses[0].CurrentLimit == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("s.yaml was not loaded")
		}
	}
}

func TestHTTPEndpoints(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"r.yaml": withLimit("1")}, nil)
	if got := get(t, "http://"+ts.Addr("http")+"/healthcheck"); got != "OK" {
		t.Errorf("/healthcheck: %q", got)
	}
	post := func() (int, string) {
		resp, err := http.Post("http://"+ts.Addr("http")+"/json", "application/json", strings.NewReader(`{"domain":"r","descriptors":[{"entries":[{"key":"k","value":"x"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != 200 || !strings.Contains(body, `"overallCode":"OK"`) {
		t.Errorf("/json: %d %s", code, body)
	}
	if code, body := post(); code != 429 || !strings.Contains(body, `"overallCode":"OVER_LIMIT"`) {
		t.Errorf("/json over the limit: %d %s", code, body)
	}
	if got := get(t, "http://"+ts.Addr("debug")+"/rlconfig"); !strings.Contains(got, "r.k: unit=HOUR requests_per_unit=1 algorithm=fixed_window") {
		t.Errorf("/rlconfig: %q", got)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestSettings(t *testing.T) {
	env := map[string]string{"USE_STATSD": "false", "STATSD_HOST": "s", "EXPIRATION_JITTER_MAX_SECONDS": "10", "REDIS_PERSECOND": "true", "PATH": "/bin", "REDIS_URL": "r:1"}
	s, err := LoadSettings(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(s.Ignored, " "), "EXPIRATION_JITTER_MAX_SECONDS REDIS_PERSECOND STATSD_HOST"; got != want {
		t.Errorf("ignored %q, want %q", got, want)
	}
	// The reference's defaults.
	if s.Port != 8080 || s.GRPCPort != 8081 || s.DebugPort != 6070 || s.RedisSocketType != "unix" || s.RuntimeRoot != "/srv/runtime_data/current" || s.RuntimeAppDir != "config" || s.NearLimitRatio != 0.8 || s.RedisTimeout != 10*time.Second || s.PrometheusAddr != ":9090" || s.LimitHeader != "RateLimit-Limit" {
		t.Errorf("defaults: %+v", s)
	}
	for _, bad := range []map[string]string{{"PORT": "eighty"}, {"CONFIG_TYPE": "GRPC_XDS_DELTA"}, {"BACKEND_TYPE": "memcache"}, {"REDIS_TYPE": "ring"}, {"GRPC_CLIENT_TLS_SAN": "x"}, {"REDIS_TIMEOUT": "soon"}} {
		if _, err := LoadSettings(func(k string) (string, bool) { v, ok := bad[k]; return v, ok }); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	// The one line at start-up.
	delete(env, "REDIS_URL")
	lb := startServer(t, miniRedis(t).Addr(), map[string]string{"r.yaml": withLimit("1")}, env).log
	if !strings.Contains(lb.String(), `msg="environment: set but not supported here, ignored" variables="[EXPIRATION_JITTER_MAX_SECONDS REDIS_PERSECOND STATSD_HOST]"`) {
		t.Errorf("the start-up line is missing:\n%s", lb)
	}
}

// TestRedisStoppedAndRestarted: while Redis is down every call is
// answered UNAVAILABLE within the timeout, and once it is back the server
// answers again; nothing ever admits past the limit.
func TestRedisStoppedAndRestarted(t *testing.T) {
	srv := redisserver.New(t)
	ts := startServer(t, srv.Addr, map[string]string{"r.yaml": withLimit("50")}, map[string]string{"REDIS_TIMEOUT": "200ms", "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION": "true"})
	var admitted, unavailable, late atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond): // paced: failures return fast
				}
				start := time.Now()
				r, err := ts.client.ShouldRateLimit(context.Background(), req("r", []string{"k", "x"}))
				if time.Since(start) > time.Second {
					late.Add(1)
				}
				switch {
				case err == nil && r.OverallCode == ok:
					admitted.Add(1)
				case status.Code(err) == codes.Unavailable:
					unavailable.Add(1)
				case err != nil:
					t.Errorf("an error other than UNAVAILABLE: %v", err)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	srv.Stop()
	ts.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	time.Sleep(500 * time.Millisecond)
	srv.Restart()
	ts.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	// The restarted Redis has no data: at most the limit before the stop
	// and the limit after.
	if n := admitted.Load(); n > 100 {
		t.Errorf("%d admitted, want at most 2 × 50", n)
	}
	if unavailable.Load() == 0 || late.Load() > 0 {
		t.Errorf("%d UNAVAILABLE, %d answers after more than 1 s: want some of the first and none of the second", unavailable.Load(), late.Load())
	}
	if r := ts.call(t, req("r", []string{"k", "y"})); r.OverallCode != ok {
		t.Errorf("after the restart: %v", r)
	}
	t.Logf("%d admitted, %d UNAVAILABLE", admitted.Load(), unavailable.Load())
}

// TestClusterMasterKilled: a master of a Redis Cluster dies; calls for
// its slots are answered within the timeout (UNAVAILABLE until its
// replica takes over), the other masters' keys keep their answers, and no
// limit is passed.
func TestClusterMasterKilled(t *testing.T) {
	c := redisserver.NewReplicated(t, 3, 1, "--cluster-node-timeout", "1000")
	ts := startServer(t, strings.Join(c.Addrs(), ","), map[string]string{"r.yaml": withLimit("8")}, map[string]string{"REDIS_TYPE": "cluster", "REDIS_TIMEOUT": "300ms"})
	values := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	admitted := map[string]int{}
	var late, unavailable int
	deadline := time.Now().Add(20 * time.Second)
	killed, recovered := false, 0
	for round := 0; time.Now().Before(deadline) && recovered < 10; round++ {
		if round == 5 {
			c.Masters[0].Stop()
			killed = true
		}
		all := true
		for _, v := range values {
			start := time.Now()
			r, err := ts.client.ShouldRateLimit(context.Background(), req("r", []string{"k", v}))
			if time.Since(start) > 1500*time.Millisecond {
				late++
			}
			switch {
			case err == nil && r.OverallCode == ok:
				admitted[v]++
			case err == nil:
			case status.Code(err) == codes.Unavailable:
				all = false
				unavailable++
			default:
				t.Fatalf("an error other than UNAVAILABLE: %v", err)
			}
		}
		if killed && all && round > 5 {
			recovered++ // every key answers again: the replica took over
		}
		time.Sleep(100 * time.Millisecond)
	}
	for v, n := range admitted {
		if n > 8 {
			t.Errorf("%s: %d admitted, want at most 8 (the replica took over the count)", v, n)
		}
	}
	if late > 0 || unavailable == 0 {
		t.Errorf("%d answers took more than 1.5 s, %d were UNAVAILABLE: want none, and some (the dead master's keys)", late, unavailable)
	}
	t.Logf("%d UNAVAILABLE during the failover; admitted %v", unavailable, admitted)
	if recovered < 10 {
		t.Errorf("the cluster did not answer every key again in 20 s")
	}
}
