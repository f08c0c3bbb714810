package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/alicebob/miniredis/v2"
)

// demoConfig is the example configuration -demo serves: the reference's
// own first example, a per-user GCRA with a burst, and a sliding window.
const demoConfig = `# The reference's format; algorithm and burst are redlimit's extension.
domain: demo
descriptors:
  # envoyproxy/ratelimit's fixed window, as it counts (but a denial counts nothing).
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 5
  # 10 a minute per user, smoothly (one every 6 s), 3 at once.
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 10
      algorithm: gcra
      burst: 3
  # 100 an hour per IP address, over a rolling hour.
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 100
      algorithm: sliding_window_counter
`

// demoEnv starts miniredis, writes the example configuration, and returns
// the environment that points the server at both, on the default ports.
func demoEnv() (map[string]string, func(), error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, nil, err
	}
	root, err := os.MkdirTemp("", "redlimit-rls-demo")
	if err != nil {
		mr.Close()
		return nil, nil, err
	}
	cleanup := func() { mr.Close(); os.RemoveAll(root) }
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(demoConfig), 0o644); err != nil {
		cleanup()
		return nil, nil, err
	}
	env := map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": mr.Addr(),
		"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit",
		"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "LOG_LEVEL": "INFO",
		"HOST": "127.0.0.1", "GRPC_HOST": "127.0.0.1", "DEBUG_HOST": "127.0.0.1",
	}
	return env, cleanup, nil
}

func printDemo(grpcAddr, httpAddr, dir string) {
	fmt.Printf(`
redlimit-rls is serving Envoy's RLS v3 on %[1]s (embedded Redis, Ctrl-C stops it).
The configuration is %[3]s/demo.yaml: edit it and the server reloads it.

Try it (grpcurl, or curl on the reference's /json endpoint):

  grpcurl -plaintext -d '{"domain":"demo","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]}' \
    %[1]s envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

  curl -s -XPOST http://%[2]s/json -d '{"domain":"demo","descriptors":[{"entries":[{"key":"database","value":"users"}]}]}'

  curl -s http://%[2]s/healthcheck

Point an Envoy at it (the http_filters of an HTTP connection manager, and a cluster):

  http_filters:
  - name: envoy.filters.http.ratelimit
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit
      domain: demo
      failure_mode_deny: false
      timeout: 0.05s
      enable_x_ratelimit_headers: DRAFT_VERSION_03
      rate_limit_service:
        transport_api_version: V3
        grpc_service:
          envoy_grpc:
            cluster_name: ratelimit
  # and on the route (or virtual host):
  rate_limits:
  - actions:
    - request_headers: {header_name: x-user, descriptor_key: user}

  clusters:
  - name: ratelimit
    type: STATIC
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: ratelimit
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: %[4]s, port_value: %[5]s}}}

docs/envoy.md has the same for Istio and Envoy Gateway, and the migration from envoyproxy/ratelimit.
`, grpcAddr, httpAddr, dir, host(grpcAddr), port(grpcAddr))
}

func host(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
