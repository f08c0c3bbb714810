package rls

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
)

// nackHold is how long the NACK of a version already refused waits: a
// go-control-plane server answers every NACK with the same response at
// once, and the two would trade it as fast as they can.
const nackHold = time.Second

// An xdsClient subscribes to the RateLimitConfig resources of an xDS
// server (aggregated, state of the world), as the reference's
// GRPC_XDS_SOTW provider does. Each response is loaded whole: one that
// loads is applied and ACKed, one that does not is NACKed with the
// refusal and the configuration before keeps serving. A stream that ends
// is opened again after a backoff.
type xdsClient struct {
	s     Settings
	node  *core.Node
	creds credentials.TransportCredentials
	build func(*discovery.DiscoveryResponse) (*Config, error)
	// apply serves a configuration that loaded; refused logs one that did
	// not; state reports the stream failing, or (nil) open.
	apply   func(*Config)
	refused func(error)
	state   func(error)
	log     *slog.Logger

	version string // the last version accepted
	nacked  string // the last version refused
}

func newXDSClient(s Settings, log *slog.Logger) (*xdsClient, error) {
	md := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range s.XDSNodeMetadata {
		md.Fields[k] = structpb.NewStringValue(v)
	}
	x := &xdsClient{s: s, node: &core.Node{Id: s.XDSNodeID, Metadata: md}, log: log, creds: insecure.NewCredentials()}
	if s.XDSTLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.XDSServerName}
		if s.XDSCert != "" {
			cert, err := tls.LoadX509KeyPair(s.XDSCert, s.XDSKey)
			if err != nil {
				return nil, fmt.Errorf("CONFIG_GRPC_XDS_CLIENT_TLS_CERT, CONFIG_GRPC_XDS_CLIENT_TLS_KEY: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		if s.XDSCACert != "" {
			pool, err := certPool(s.XDSCACert)
			if err != nil {
				return nil, fmt.Errorf("CONFIG_GRPC_XDS_SERVER_TLS_CACERT: %w", err)
			}
			tc.RootCAs = pool
		}
		x.creds = credentials.NewTLS(tc)
	}
	return x, nil
}

// run keeps a stream open until ctx ends.
func (x *xdsClient) run(ctx context.Context) {
	for attempt := 0; ; attempt++ {
		answered, err := x.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if answered {
			attempt = 0
		}
		wait := backoff(x.s, attempt)
		err = fmt.Errorf("the xDS server %s: %w (next attempt in %v)", x.s.XDSServerURL, err, wait.Round(time.Millisecond))
		x.log.Warn("configuration: " + err.Error())
		x.state(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// backoff is the wait before attempt n+1 (n from 0).
func backoff(s Settings, n int) time.Duration {
	d := s.XDSBackoffInitial
	for i := 0; i < n && d < s.XDSBackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.XDSBackoffMax)
	if s.XDSBackoffJitter && s.XDSBackoffRandom > 0 {
		d = time.Duration(float64(d) * (1 + s.XDSBackoffRandom*(2*rand.Float64()-1)))
	}
	return d
}

// stream opens one stream and serves it until it fails; answered says
// whether the server sent anything.
func (x *xdsClient) stream(ctx context.Context) (answered bool, err error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(x.creds)}
	if x.s.XDSMaxMsgSize > 0 {
		opts = append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(x.s.XDSMaxMsgSize)))
	}
	conn, err := grpc.NewClient(x.s.XDSServerURL, opts...)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, metadata.New(x.s.XDSHeaders)))
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	// A new stream asks for everything (no version), so that a server
	// that restarted and counts its versions from 1 again cannot leave a
	// configuration of the old count serving.
	if err := st.Send(&discovery.DiscoveryRequest{Node: x.node, TypeUrl: rateLimitConfigType}); err != nil {
		return false, err
	}
	x.state(nil)
	for {
		resp, err := st.Recv()
		if err != nil {
			return answered, err
		}
		answered = true
		req := x.handle(resp)
		if req.ErrorDetail != nil {
			if resp.VersionInfo == x.nacked {
				select {
				case <-ctx.Done():
					return answered, ctx.Err()
				case <-time.After(nackHold):
				}
			}
			x.nacked = resp.VersionInfo
		}
		if err := st.Send(req); err != nil {
			return answered, err
		}
	}
}

// handle loads a response and returns its ACK, or its NACK: the version
// accepted before, and the refusal.
func (x *xdsClient) handle(resp *discovery.DiscoveryResponse) *discovery.DiscoveryRequest {
	req := &discovery.DiscoveryRequest{Node: x.node, TypeUrl: rateLimitConfigType, ResponseNonce: resp.Nonce}
	var c *Config
	err := fmt.Errorf("the response is of type %s, not %s", resp.TypeUrl, rateLimitConfigType)
	if resp.TypeUrl == rateLimitConfigType {
		c, err = x.build(resp)
	}
	if err != nil {
		if resp.VersionInfo != x.nacked {
			x.refused(fmt.Errorf("the xDS server's version %q: %w", resp.VersionInfo, err))
		}
		req.VersionInfo = x.version
		req.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
		return req
	}
	x.version, x.nacked = resp.VersionInfo, ""
	x.log.Info("configuration loaded", "xds_server", x.s.XDSServerURL, "version", resp.VersionInfo, "resources", c.Files, "domains", len(c.domains))
	x.apply(c)
	req.VersionInfo = x.version
	return req
}
