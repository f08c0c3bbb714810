package rls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// xdsEnv is the environment both servers get to read from the xDS server
// at addr as node, with short reconnection waits.
func xdsEnv(addr, node string, extra ...string) map[string]string {
	env := map[string]string{
		"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": addr, "CONFIG_GRPC_XDS_NODE_ID": node,
		"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "100ms", "XDS_CLIENT_BACKOFF_MAX_INTERVAL": "400ms",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func policy(unit rlsconf.RateLimitUnit, n uint32) *rlsconf.RateLimitPolicy {
	return &rlsconf.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}
}

// The resources of the reference's own xDS provider test, first and then
// deeper (test/provider/xds_grpc_sotw_provider_test.go), with a week and
// a year, which only the pseudo-version of the protos it builds with
// names.
var (
	xdsInitial = []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", Value: "v1", RateLimit: policy(rlsconf.RateLimitUnit_MINUTE, 3)},
	}}}
	xdsUpdate = []*rlsconf.RateLimitConfig{
		{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "k1", Value: "v1", RateLimit: policy(rlsconf.RateLimitUnit_MINUTE, 10), Descriptors: []*rlsconf.RateLimitDescriptor{
				{Key: "k2", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
				{Key: "k2", Value: "v2", RateLimit: policy(rlsconf.RateLimitUnit_HOUR, 15)},
			}},
			{Key: "j1", Value: "v2", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}, Descriptors: []*rlsconf.RateLimitDescriptor{
				{Key: "j2", Value: "v2", RateLimit: policy(rlsconf.RateLimitUnit_DAY, 2), ShadowMode: true},
				{Key: "j2", RateLimit: policy(rlsconf.RateLimitUnit_WEEK, 4)},
			}},
			{Key: "named", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: 2, Name: "old"}},
			{Key: "replacer", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_YEAR, RequestsPerUnit: 3, Replaces: []*rlsconf.RateLimitReplace{{Name: "old"}}}},
		}},
		{Name: "bar", Domain: "bar", Descriptors: []*rlsconf.RateLimitDescriptor{
			{Key: "k1", Value: "v1", RateLimit: policy(rlsconf.RateLimitUnit_SECOND, 4)},
		}},
	}
	// xdsRestarted is what a control plane that restarted serves.
	xdsRestarted = []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", Value: "v1", RateLimit: policy(rlsconf.RateLimitUnit_MINUTE, 5)},
		{Key: "k3", RateLimit: policy(rlsconf.RateLimitUnit_HOUR, 2)},
	}}}
)

// xdsBad are updates the reference refuses, each with its reason.
var xdsBad = []struct {
	name    string
	configs []*rlsconf.RateLimitConfig
}{
	{"a unit of UNKNOWN", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", RateLimit: &rlsconf.RateLimitPolicy{RequestsPerUnit: 3}}}}}},
	{"a unit no name has", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", RateLimit: policy(42, 3)}}}}},
	{"an empty domain", []*rlsconf.RateLimitConfig{{Name: "foo"}}},
	{"an empty key", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Value: "v", RateLimit: policy(rlsconf.RateLimitUnit_MINUTE, 3)}}}}},
	{"a duplicate descriptor", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", Value: "v1", RateLimit: policy(rlsconf.RateLimitUnit_MINUTE, 3)}, {Key: "k1", Value: "v1"}}}}},
	{"unlimited with a unit", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true, Unit: rlsconf.RateLimitUnit_HOUR}}}}}},
	{"a rule that replaces itself", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 1, Name: "n", Replaces: []*rlsconf.RateLimitReplace{{Name: "n"}}}}}}}},
	{"an empty replaces entry", []*rlsconf.RateLimitConfig{{Name: "foo", Domain: "foo", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k1", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: 1, Replaces: []*rlsconf.RateLimitReplace{{}}}}}}}},
}

// xdsFiles are configs as the files they stand for, to ask descriptors of.
func xdsFiles(configs []*rlsconf.RateLimitConfig) []*yamlFile {
	var fs []*yamlFile
	for _, c := range configs {
		fs = append(fs, xdsFile(c))
	}
	return fs
}

// TestXDS: the reference and this server read one go-control-plane xDS
// server (as Envoy Gateway runs both, FORCE_START_WITHOUT_INITIAL_CONFIG
// set) and answer alike: nothing before the first configuration, then
// every answer the same for the initial configuration and an update; a
// bad update is NACKed by both with the same message and the one before
// keeps serving; while the xDS server is gone both keep serving, and
// both load what it serves when it is back.
func TestXDS(t *testing.T) {
	if got := rateLimitConfigType; got != resourcev3.RateLimitConfigType {
		t.Fatalf("rateLimitConfigType %q, want go-control-plane's %q", got, resourcev3.RateLimitConfigType)
	}
	addr := redisserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	xds := startXDS(t, "")
	nodes := []string{"reference", "redlimit"}
	ref := startReference(t, addr, nil, xdsEnv(xds.addr, "reference", "FORCE_START_WITHOUT_INITIAL_CONFIG", "true"))
	ours := startServer(t, addr, nil, xdsEnv(xds.addr, "redlimit", "FORCE_START_WITHOUT_INITIAL_CONFIG", "true"))
	version := 0
	serve := func(t *testing.T, configs []*rlsconf.RateLimitConfig) string {
		t.Helper()
		version++
		v := fmt.Sprintf("v%d", version)
		xds.set(t, v, nodes, configs...)
		return v
	}

	t.Run("before the first configuration", func(t *testing.T) {
		r := req("foo", []string{"k1", "v1"})
		_, rerr := ref.client.ShouldRateLimit(context.Background(), r)
		_, oerr := ours.client.ShouldRateLimit(context.Background(), r)
		if rerr == nil || !strings.Contains(rerr.Error(), "no rate limit configuration loaded") {
			t.Errorf("the reference answered %v, want its error 'no rate limit configuration loaded'", rerr)
		}
		if status.Code(oerr) != codes.Unavailable || !strings.Contains(oerr.Error(), "waiting for the first configuration from the xDS server "+xds.addr) {
			t.Errorf("here: %v, want UNAVAILABLE naming the xDS server", oerr)
		}
		// Both are healthy: Envoy Gateway's probes would restart a pod
		// that waits for a configuration it has no policy for.
		if code, err := ref.healthcheck(); code != http.StatusOK {
			t.Errorf("the reference's /healthcheck %d %v, want 200", code, err)
		}
		ours.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	})

	t.Run("initial configuration", func(t *testing.T) {
		v := serve(t, xdsInitial)
		for _, n := range nodes {
			if r := xds.waitReply(t, n, v); r.nack != "" || r.held != v {
				t.Fatalf("%s answered %+v, want an ACK of %s", n, r, v)
			}
		}
		compareServers(t, rdb, ref, ours, treeCase("initial", 60, xdsFiles(xdsInitial)...))
	})

	t.Run("an update", func(t *testing.T) {
		v := serve(t, xdsUpdate)
		for _, n := range nodes {
			if r := xds.waitReply(t, n, v); r.nack != "" || r.held != v {
				t.Fatalf("%s answered %+v, want an ACK of %s", n, r, v)
			}
		}
		compareServers(t, rdb, ref, ours, treeCase("update", 150, xdsFiles(xdsUpdate)...))
	})

	good := fmt.Sprintf("v%d", version)
	for _, bad := range xdsBad {
		t.Run("a bad update: "+bad.name, func(t *testing.T) {
			v := serve(t, bad.configs)
			rr, or := xds.waitReply(t, "reference", v), xds.waitReply(t, "redlimit", v)
			if rr.nack == "" || rr.held != good {
				t.Fatalf("the reference answered %+v, want a NACK holding %s", rr, good)
			}
			if or != rr {
				t.Errorf("here %+v, the reference %+v: want the same NACK", or, rr)
			}
		})
	}

	t.Run("after a bad update the one before keeps serving", func(t *testing.T) {
		compareServers(t, rdb, ref, ours, treeCase("kept", 60, xdsFiles(xdsUpdate)...))
		if d := ours.Service().Config().Dump(); !strings.Contains(d, "bar.k1_v1: unit=SECOND requests_per_unit=4") {
			t.Errorf("the configuration serving here:\n%s", d)
		}
	})

	t.Run("a NACK is not traded back and forth", func(t *testing.T) {
		// go-control-plane answers each NACK with the same response at
		// once: the reference NACKs as fast as it can, this server once a
		// second.
		last := fmt.Sprintf("v%d", version)
		r0, o0 := xds.nacks("reference", last), xds.nacks("redlimit", last)
		time.Sleep(2 * time.Second)
		r1, o1 := xds.nacks("reference", last), xds.nacks("redlimit", last)
		t.Logf("NACKs of one bad version in 2 s: the reference %d, here %d", r1-r0, o1-o0)
		if o1-o0 > 3 {
			t.Errorf("%d NACKs here in 2 s, want at most 3 (one a second)", o1-o0)
		}
		if r1-r0 < 20 {
			t.Errorf("the reference NACKed %d times in 2 s; docs/envoy.md says it trades a bad version as fast as it can", r1-r0)
		}
	})

	t.Run("the xDS server goes away and comes back", func(t *testing.T) {
		xds.grpc.Stop()
		time.Sleep(500 * time.Millisecond) // both have seen the stream end
		compareServers(t, rdb, ref, ours, treeCase("away", 60, xdsFiles(xdsUpdate)...))
		ours.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
		// A control plane that restarts counts its versions again.
		xds = startXDS(t, xds.addr)
		xds.set(t, "v1", nodes, xdsRestarted...)
		for _, n := range nodes {
			if r := xds.waitReply(t, n, "v1"); r.nack != "" {
				t.Fatalf("%s answered %+v, want an ACK", n, r)
			}
		}
		compareServers(t, rdb, ref, ours, treeCase("back", 60, xdsFiles(xdsRestarted)...))
	})
}

// TestXDSWaitsForTheFirstConfiguration: without
// FORCE_START_WITHOUT_INITIAL_CONFIG the reference does not listen until
// the first configuration arrives; this server listens and reports itself
// unhealthy, naming the xDS server, until then.
func TestXDSWaitsForTheFirstConfiguration(t *testing.T) {
	addr := redisserver.Start(t)
	xds := startXDS(t, "")
	ref := launchReference(t, addr, nil, xdsEnv(xds.addr, "reference"))
	ours := startServer(t, addr, nil, withNoWait(xdsEnv(xds.addr, "redlimit")))
	time.Sleep(time.Second)
	if code, err := ref.healthcheck(); err == nil {
		t.Errorf("the reference's /healthcheck answered %d before a configuration; want no answer (it does not listen yet)", code)
	}
	ours.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	if ps := strings.Join(ours.Server.health.problems(), "\n"); !strings.Contains(ps, "waiting for the first configuration from the xDS server "+xds.addr) {
		t.Errorf("health says %q, want it to name the xDS server", ps)
	}
	xds.set(t, "v1", []string{"reference", "redlimit"}, xdsInitial...)
	ours.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _ := ref.healthcheck(); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference is not healthy 15 s after its first configuration:\n%s", ref.log)
		}
	}
	want := ref.call(t, req("foo", []string{"k1", "v1"}))
	got := ours.call(t, req("foo", []string{"k1", "v1"}))
	if got.OverallCode != want.OverallCode || got.Statuses[0].LimitRemaining != want.Statuses[0].LimitRemaining {
		t.Errorf("here %v, the reference %v", got, want)
	}
}

// withNoWait is env, and startServer does not wait for health.
func withNoWait(env map[string]string) map[string]string {
	m := map[string]string{"-nowait": ""}
	for k, v := range env {
		m[k] = v
	}
	return m
}

// TestXDSSettings: the xDS variables are read with the reference's
// defaults, and what cannot be used is refused by name.
func TestXDSSettings(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	s, err := LoadSettings(env("CONFIG_TYPE", "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_NODE_METADATA", "a=1,b=x=y",
		"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "k:v,auth:Bearer a:b", "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "1s"))
	if err != nil {
		t.Fatal(err)
	}
	if s.XDSServerURL != "localhost:18000" || s.XDSNodeID != "default" || s.XDSBackoffInitial != 10*time.Second ||
		s.XDSBackoffMax != time.Minute || s.XDSBackoffRandom != 0.5 || !s.XDSBackoffJitter || len(s.Ignored) != 0 {
		t.Errorf("defaults: %+v", s)
	}
	if s.XDSNodeMetadata["b"] != "x=y" || s.XDSHeaders["auth"] != "Bearer a:b" {
		t.Errorf("metadata %v, headers %v", s.XDSNodeMetadata, s.XDSHeaders)
	}
	for _, bad := range [][]string{
		{"CONFIG_TYPE", "GRPC_XDS_DELTA"},
		{"CONFIG_GRPC_XDS_NODE_METADATA", "a:1"},
		{"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "k=v"},
		{"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "0s"},
		{"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "1s"},
		{"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "2"},
		{"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "c.pem"},
	} {
		if _, err := LoadSettings(env(bad...)); err == nil || !strings.Contains(err.Error(), bad[len(bad)-2]) {
			t.Errorf("%v: %v, want a refusal naming %s", bad, err, bad[len(bad)-2])
		}
	}
	// Waits double from the initial one to the maximum, each within
	// ±RANDOM_FACTOR.
	s.XDSBackoffInitial, s.XDSBackoffMax = time.Second, 10*time.Second
	for n, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		want *= time.Second
		for i := 0; i < 50; i++ {
			if d := backoff(s, n); d < want/2 || d > want*3/2 {
				t.Fatalf("attempt %d: waits %v, want %v ± 50%%", n, d, want)
			}
		}
	}
	s.XDSBackoffJitter = false
	if d := backoff(s, 2); d != 4*time.Second {
		t.Errorf("without jitter attempt 2 waits %v, want 4s", d)
	}
}

// TestXDSUnitNames: every unit the protos name loads, week, month and
// year included, and a rule's source is its resource.
func TestXDSUnitNames(t *testing.T) {
	c, err := assemble(xdsFiles(xdsUpdate), false, testBind(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bar.k1_v1: unit=SECOND requests_per_unit=4 algorithm=fixed_window, shadow_mode: false, quota_mode: false (bar)",
		"foo.j1_v2.j2: unit=WEEK requests_per_unit=4 algorithm=fixed_window, shadow_mode: false, quota_mode: false (foo)",
		"foo.j1_v2.j2_v2: unit=DAY requests_per_unit=2 algorithm=fixed_window, shadow_mode: true, quota_mode: false (foo)",
		"foo.replacer: unit=YEAR requests_per_unit=3 algorithm=fixed_window, shadow_mode: false, quota_mode: false (foo)",
	}
	d := c.Dump()
	for _, w := range want {
		if !strings.Contains(d, w+"\n") {
			t.Errorf("Dump lacks %q:\n%s", w, d)
		}
	}
}

// TestXDSOverTLS: with the server's CA, a client certificate and the name
// the server's certificate holds (CONFIG_GRPC_XDS_SERVER_TLS_SAN), the
// configuration arrives over mutual TLS, as Envoy Gateway serves it;
// without the name the handshake fails and health says so.
func TestXDSOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey, "xds.test")
	newCert(t, dir, "client", ca, caKey)
	serverCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	xds := startXDS(t, "", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})))
	xds.set(t, "v1", []string{"redlimit"}, xdsInitial...)
	env := xdsEnv(xds.addr, "redlimit", "CONFIG_GRPC_XDS_SERVER_USE_TLS", "true",
		"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", filepath.Join(dir, "client.pem"), "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", filepath.Join(dir, "client.key"),
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", filepath.Join(dir, "ca.pem"))
	mr := miniRedis(t)
	wrongName := startServer(t, mr.Addr(), nil, withNoWait(env))
	env["CONFIG_GRPC_XDS_SERVER_TLS_SAN"] = "xds.test"
	ours := startServer(t, mr.Addr(), nil, env)
	if r := ours.call(t, req("foo", []string{"k1", "v1"})); r.Statuses[0].LimitRemaining != 2 {
		t.Errorf("over TLS: %v, want 2 remaining of the initial configuration's 3", r)
	}
	waitProblem(t, wrongName, "certificate")
}

// waitProblem waits up to 10 s for ts's health to name problem.
func waitProblem(t *testing.T, ts *testServer, problem string) {
	t.Helper()
	var ps string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ps = strings.Join(ts.Server.health.problems(), "\n"); strings.Contains(ps, problem) {
			return
		}
	}
	t.Fatalf("health says %q after 10 s, want it to name %q", ps, problem)
}

// TestXDSHealthyWithAConfiguration: with
// HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED a configuration without a
// domain keeps health failing, as the reference's does.
func TestXDSHealthyWithAConfiguration(t *testing.T) {
	xds := startXDS(t, "")
	ours := startServer(t, miniRedis(t).Addr(), nil, withNoWait(xdsEnv(xds.addr, "redlimit",
		"FORCE_START_WITHOUT_INITIAL_CONFIG", "true", "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true")))
	waitProblem(t, ours, "waiting for the first configuration")
	xds.set(t, "v1", []string{"redlimit"})
	if r := xds.waitReply(t, "redlimit", "v1"); r.nack != "" {
		t.Fatalf("an empty configuration was NACKed: %+v", r)
	}
	waitProblem(t, ours, "the configuration has no domain")
	xds.set(t, "v2", []string{"redlimit"}, xdsInitial...)
	ours.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
}

// newCert writes name.pem and name.key under dir: a CA when parent is nil,
// else a certificate parent signs for the DNS names.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, dns ...string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, name+".pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, filepath.Join(dir, name+".key"), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
