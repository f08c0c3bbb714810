package rls

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"sync"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// A Server is the running service: RLS v3 and gRPC health on the gRPC
// listener, /healthcheck and /json on the HTTP one, pprof and /rlconfig on
// the debug one, and /metrics (USE_PROMETHEUS) on its own.
type Server struct {
	svc    *Service
	health *healthState
	rdb    redis.UniversalClient
	// closeScripter closes what the limiters send through (pipeliner).
	closeScripter func()
	log           *slog.Logger
	grpc          *grpc.Server
	https         []*http.Server
	addrs         map[string]string
	cancel        context.CancelFunc
	errc          chan error
	wg            sync.WaitGroup
	// healthyWithout: health does not wait for a configuration (xDS with
	// FORCE_START_WITHOUT_INITIAL_CONFIG, as the reference).
	healthyWithout bool
}

// Start starts the server that s describes and returns once it listens.
// It does not wait for Redis or for a configuration: until both are
// there, health says why not and calls are answered UNAVAILABLE. It
// fails when a setting cannot be used or a listener cannot be opened.
func Start(ctx context.Context, s Settings, log *slog.Logger) (*Server, error) {
	if len(s.Ignored) > 0 {
		log.Warn("environment: set but not supported here, ignored", "variables", s.Ignored)
	}
	rdb, err := newRedis(s)
	if err != nil {
		return nil, err
	}
	scripter, closeScripter, err := pipeliner(rdb, s)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	lims, err := newLimiters(scripter, limiterOptions{prefix: s.CacheKeyPrefix, timeout: s.RedisTimeout, onFailure: s.OnRedisFailure, denyCache: s.denyCacheEntries()})
	if err != nil {
		closeScripter()
		rdb.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	srv := &Server{rdb: rdb, closeScripter: closeScripter, log: log, health: newHealth(), addrs: map[string]string{}, cancel: cancel, errc: make(chan error, 4)}
	srv.svc = &Service{lims: lims, opts: serviceOptions{
		headers: s.Headers, limitHeader: s.LimitHeader, remainingHeader: s.RemainingHeader, resetHeader: s.ResetHeader,
		nearLimitRatio: s.NearLimitRatio, globalShadowMode: s.ShadowMode, globalQuotaMode: s.QuotaMode, now: time.Now,
	}}
	var reg *prometheus.Registry
	if s.Prometheus {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		srv.svc.metrics = newMetrics(reg)
	}
	fail := func(err error) (*Server, error) {
		srv.Close()
		return nil, err
	}

	if s.ConfigType == "GRPC_XDS_SOTW" {
		err = srv.subscribe(ctx, s, lims.bind)
	} else {
		srv.watchFiles(ctx, s, lims.bind)
	}
	if err != nil {
		return fail(err)
	}

	gopts := []grpc.ServerOption{grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: s.GRPCMaxAge, MaxConnectionAgeGrace: s.GRPCGrace})}
	if s.GRPCTLS {
		tc, err := serverTLS(s)
		if err != nil {
			return fail(err)
		}
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tc)))
	}
	srv.grpc = grpc.NewServer(gopts...)
	rlpb.RegisterRateLimitServiceServer(srv.grpc, srv.svc)
	healthpb.RegisterHealthServer(srv.grpc, srv.health.grpc)
	network, addr := "tcp", net.JoinHostPort(s.GRPCHost, strconv.Itoa(s.GRPCPort))
	if s.GRPCUDS != "" {
		network, addr = "unix", s.GRPCUDS
		_ = os.Remove(addr) // a socket left by a process that is gone
	}
	gl, err := net.Listen(network, addr)
	if err != nil {
		return fail(fmt.Errorf("the gRPC listener: %w", err))
	}
	srv.addrs["grpc"] = gl.Addr().String()
	srv.serve(func() error { return srv.grpc.Serve(gl) })

	api := http.NewServeMux()
	api.Handle("/healthcheck", srv.health)
	api.HandleFunc("/json", srv.serveJSON)
	debug := http.NewServeMux()
	debug.HandleFunc("/debug/pprof/", pprof.Index)
	debug.HandleFunc("/debug/pprof/profile", pprof.Profile)
	debug.HandleFunc("/debug/pprof/trace", pprof.Trace)
	debug.HandleFunc("/rlconfig", srv.serveConfig)
	debug.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "/debug/pprof/: root of various pprof endpoints. hit for help.\n/rlconfig: print out the currently loaded configuration for debugging\n")
	})
	listeners := []struct {
		name, addr string
		h          http.Handler
	}{
		{"http", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), api},
		{"debug", net.JoinHostPort(s.DebugHost, strconv.Itoa(s.DebugPort)), debug},
	}
	if reg != nil {
		pm := http.NewServeMux()
		pm.Handle(s.PrometheusPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		listeners = append(listeners, struct {
			name, addr string
			h          http.Handler
		}{"prometheus", s.PrometheusAddr, pm})
	}
	for _, hl := range listeners {
		ln, err := net.Listen("tcp", hl.addr)
		if err != nil {
			return fail(fmt.Errorf("the %s listener: %w", hl.name, err))
		}
		srv.addrs[hl.name] = ln.Addr().String()
		hs := &http.Server{Handler: hl.h, ReadHeaderTimeout: 10 * time.Second}
		srv.https = append(srv.https, hs)
		srv.serve(func() error {
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}

	srv.wg.Add(1)
	go func() { defer srv.wg.Done(); srv.watchRedis(ctx, s.RedisHealthCheck) }()
	log.Info("listening", "grpc", srv.addrs["grpc"], "http", srv.addrs["http"], "debug", srv.addrs["debug"], "prometheus", srv.addrs["prometheus"])
	return srv, nil
}

func (srv *Server) serve(f func() error) {
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		if err := f(); err != nil {
			srv.errc <- err
		}
	}()
}

// Addr is the address a listener took: "grpc", "http", "debug" or
// "prometheus" ("" when it is not open).
func (srv *Server) Addr(listener string) string { return srv.addrs[listener] }

// Service is the server's RLS service.
func (srv *Server) Service() *Service { return srv.svc }

// Err delivers the first error a listener fails with.
func (srv *Server) Err() <-chan error { return srv.errc }

// Close reports the server unhealthy, lets calls in flight finish (at
// most 5 s), and stops it.
func (srv *Server) Close() {
	srv.health.set("sigterm", errors.New("shutting down"))
	srv.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if srv.grpc != nil {
		stopped := make(chan struct{})
		go func() { srv.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			srv.grpc.Stop()
		}
	}
	for _, hs := range srv.https {
		_ = hs.Shutdown(ctx)
	}
	srv.wg.Wait()
	srv.closeScripter()
	srv.rdb.Close()
}

// watchRedis reports Redis healthy once it answers, logs what
// preflight.Check finds then, and, with follow, keeps health in step with
// Redis after that.
func (srv *Server) watchRedis(ctx context.Context, follow bool) {
	wait := 250 * time.Millisecond
	for checked := false; ; {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := pingRedis(pctx, srv.rdb)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			err = fmt.Errorf("Redis does not answer: %w", err)
			if !checked {
				srv.log.Warn("waiting for Redis", "err", err)
			}
		}
		if !checked || follow {
			srv.health.set("redis", err)
		}
		if err == nil && !checked {
			checked = true
			fs, cerr := findings(ctx, srv.rdb)
			for _, f := range fs {
				srv.log.Warn("redis: " + f)
			}
			if cerr != nil {
				srv.log.Warn("redis: the configuration check failed", "err", cerr)
			}
		}
		if checked && !follow {
			return
		}
		if err != nil {
			wait = min(2*wait, 2*time.Second)
		} else {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// serveJSON is the reference's /json: a RateLimitRequest in JSON, the
// response in JSON, 200 when OK and 429 when over the limit. A refused
// request is 400 with its reason, a Redis failure 503.
func (srv *Server) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req rlpb.RateLimitRequest
	if err == nil {
		err = protojson.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := srv.svc.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		code := http.StatusBadRequest
		if c := status.Code(err); c == codes.Unavailable || c == codes.Internal {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.OverallCode == rlpb.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	_, _ = w.Write(out)
}

// serveConfig is /rlconfig: every rule of the configuration serving.
func (srv *Server) serveConfig(w http.ResponseWriter, _ *http.Request) {
	c := srv.svc.Config()
	if c == nil {
		http.Error(w, errNoConfig.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, c.Dump())
}

// serverTLS is the gRPC listener's TLS: its certificate, and when
// GRPC_CLIENT_TLS_CACERT is set, client certificates that chain to it.
func serverTLS(s Settings) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.GRPCCert, s.GRPCKey)
	if err != nil {
		return nil, fmt.Errorf("GRPC_SERVER_TLS_CERT, GRPC_SERVER_TLS_KEY: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.GRPCCACert != "" {
		pool, err := certPool(s.GRPCCACert)
		if err != nil {
			return nil, fmt.Errorf("GRPC_CLIENT_TLS_CACERT: %w", err)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}
