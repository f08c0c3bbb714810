package rls

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
)

// A testXDS is go-control-plane's own xDS server, its snapshot cache
// behind its ADS server as Envoy Gateway runs them, on a loopback port.
// It records every request and which version each nonce answered.
type testXDS struct {
	addr  string
	cache cachev3.SnapshotCache
	grpc  *grpc.Server

	mu       sync.Mutex
	requests map[string][]streamRequest // by node ID
	versions map[streamNonce]string     // the version each response was
}

// Nonces are a stream's own.
type streamNonce struct {
	stream int64
	nonce  string
}

type streamRequest struct {
	stream int64
	*discovery.DiscoveryRequest
}

// startXDS serves on addr ("" for a free port) with opts; it stops with
// the test.
func startXDS(t testing.TB, addr string, opts ...grpc.ServerOption) *testXDS {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	x := &testXDS{addr: l.Addr().String(), cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil),
		requests: map[string][]streamRequest{}, versions: map[streamNonce]string{}}
	var node sync.Map // stream ID → node ID: only a stream's first request must name it
	cb := serverv3.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *discovery.DiscoveryRequest) error {
			if req.Node != nil {
				node.Store(id, req.Node.Id)
			}
			n, _ := node.Load(id)
			x.mu.Lock()
			defer x.mu.Unlock()
			x.requests[n.(string)] = append(x.requests[n.(string)], streamRequest{id, req})
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
			x.mu.Lock()
			defer x.mu.Unlock()
			x.versions[streamNonce{id, resp.Nonce}] = resp.VersionInfo
		},
	}
	x.grpc = grpc.NewServer(opts...)
	discovery.RegisterAggregatedDiscoveryServiceServer(x.grpc, serverv3.NewServer(context.Background(), x.cache, cb))
	go func() { _ = x.grpc.Serve(l) }()
	t.Cleanup(x.grpc.Stop)
	return x
}

// set makes configs the snapshot of version for each node.
func (x *testXDS) set(t testing.TB, version string, nodes []string, configs ...*rlsconf.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(configs))
	for i, c := range configs {
		res[i] = c
	}
	snap, err := cachev3.NewSnapshot(version, map[resourcev3.Type][]types.Resource{resourcev3.RateLimitConfigType: res})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := x.cache.SetSnapshot(context.Background(), n, snap); err != nil {
			t.Fatal(err)
		}
	}
}

// An xdsReply is how a node answered a version: ACK (nack empty) or
// NACK with its message.
type xdsReply struct {
	version string // the version answered
	held    string // the version the request holds
	nack    string
}

// replies are node's answers to the responses it got, in order.
func (x *testXDS) replies(node string) []xdsReply {
	x.mu.Lock()
	defer x.mu.Unlock()
	var rs []xdsReply
	for _, req := range x.requests[node] {
		v, ok := x.versions[streamNonce{req.stream, req.ResponseNonce}]
		if req.ResponseNonce == "" || !ok {
			continue
		}
		rs = append(rs, xdsReply{version: v, held: req.VersionInfo, nack: req.GetErrorDetail().GetMessage()})
	}
	return rs
}

// waitReply waits up to 15 s for node's first answer to version.
func (x *testXDS) waitReply(t testing.TB, node, version string) xdsReply {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, r := range x.replies(node) {
			if r.version == version {
				return r
			}
		}
	}
	t.Fatalf("node %q did not answer version %q in 15 s; its answers: %+v", node, version, x.replies(node))
	return xdsReply{}
}

// nacks counts node's NACKs of version.
func (x *testXDS) nacks(node, version string) int {
	n := 0
	for _, r := range x.replies(node) {
		if r.version == version && r.nack != "" {
			n++
		}
	}
	return n
}
