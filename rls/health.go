package rls

import (
	"net/http"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthServiceName is the gRPC health service the reference reports.
const healthServiceName = "ratelimit"

// A healthState is the server's health: serving when every component is
// well. The components are "config" (a configuration loaded), "redis"
// (Redis answered), and "sigterm" (not shutting down). Each failing one
// keeps its reason, which /healthcheck shows.
type healthState struct {
	mu     sync.Mutex
	grpc   *health.Server
	failed map[string]string
}

func newHealth() *healthState {
	h := &healthState{grpc: health.NewServer(), failed: map[string]string{
		"config": errNoConfig.Error(),
		"redis":  "Redis has not answered yet",
	}}
	h.publish()
	return h
}

func (h *healthState) set(component string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.failed, component)
	} else {
		h.failed[component] = err.Error()
	}
	h.publish()
}

func (h *healthState) publish() {
	st := healthpb.HealthCheckResponse_SERVING
	if len(h.failed) > 0 {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	h.grpc.SetServingStatus("", st)
	h.grpc.SetServingStatus(healthServiceName, st)
}

// problems lists the failing components' reasons; none when healthy.
func (h *healthState) problems() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []string
	for c, why := range h.failed {
		ps = append(ps, c+": "+why)
	}
	sort.Strings(ps)
	return ps
}

// ServeHTTP is /healthcheck: 200 "OK" when healthy, else 500 with the
// reasons, one a line.
func (h *healthState) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if ps := h.problems(); len(ps) > 0 {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(strings.Join(ps, "\n") + "\n"))
		return
	}
	_, _ = w.Write([]byte("OK"))
}
