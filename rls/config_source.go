package rls

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// This file connects the sources of configuration (files, an xDS server)
// to the service and its health.

// watchFiles loads the configuration directory now and again whenever it
// changes.
func (srv *Server) watchFiles(ctx context.Context, s Settings, bind func(*Rule) error) {
	l := &loader{dir: s.ConfigDir(), root: filepath.Dir(filepath.Clean(s.RuntimeRoot)), merge: s.MergeDomains, bind: bind, log: srv.log,
		apply: srv.applyConfig, refused: srv.refuseConfig}
	_ = l.load()
	srv.wg.Add(1)
	go func() { defer srv.wg.Done(); l.watch(ctx, 5*time.Second) }()
}

// subscribe takes the configuration from the xDS server of s. It fails
// when the client's TLS files cannot be used.
func (srv *Server) subscribe(ctx context.Context, s Settings, bind func(*Rule) error) error {
	x, err := newXDSClient(s, srv.log)
	if err != nil {
		return err
	}
	waiting := fmt.Errorf("waiting for the first configuration from the xDS server %s (node %q)", s.XDSServerURL, s.XDSNodeID)
	srv.svc.noConfig.Store(&noConfig{waiting})
	srv.healthyWithout = s.ForceStart && !s.HealthyWithConfig
	if srv.healthyWithout {
		srv.health.set("config", nil)
	} else {
		srv.health.set("config", waiting)
	}
	x.build = func(resp *discovery.DiscoveryResponse) (*Config, error) {
		return xdsConfig(resp.Resources, s.MergeDomains, bind)
	}
	x.apply = func(c *Config) {
		srv.applyConfig(c)
		if s.HealthyWithConfig && len(c.domains) == 0 {
			srv.health.set("config", errors.New("the configuration has no domain (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)"))
		}
	}
	x.refused = srv.refuseConfig
	x.state = func(err error) {
		if srv.svc.Config() != nil {
			return
		}
		if err == nil {
			err = waiting
		}
		srv.svc.noConfig.Store(&noConfig{err})
		if !srv.healthyWithout {
			srv.health.set("config", err)
		}
	}
	srv.wg.Add(1)
	go func() { defer srv.wg.Done(); x.run(ctx) }()
	return nil
}

// applyConfig serves c.
func (srv *Server) applyConfig(c *Config) {
	srv.svc.SetConfig(c)
	srv.health.set("config", nil)
	if m := srv.svc.metrics; m != nil {
		m.configLoadSuccess.Inc()
	}
}

// refuseConfig logs and counts a configuration that did not load; the
// one before keeps serving.
func (srv *Server) refuseConfig(err error) {
	if m := srv.svc.metrics; m != nil {
		m.configLoadError.Inc()
	}
	if srv.svc.Config() != nil {
		srv.log.Error("configuration refused; the one loaded before keeps serving", "err", err)
		return
	}
	srv.log.Error("configuration refused; no configuration serves: every call is answered UNAVAILABLE", "err", err)
	srv.svc.noConfig.Store(&noConfig{err})
	if !srv.healthyWithout {
		srv.health.set("config", err)
	}
}
