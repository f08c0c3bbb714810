// Package grpclimit limits gRPC servers with any ratelimit.Rule: unary and
// stream server interceptors that deny a call with codes.ResourceExhausted
// and, in the status details, when to retry (errdetails.RetryInfo) and which
// limits denied (errdetails.QuotaFailure).
//
//	import "github.com/redlimit/redlimit/adapters/grpclimit"
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err)
//	}
//	key := grpclimit.ByMethod(grpclimit.ByPeer())
//	srv := grpc.NewServer(
//		grpc.UnaryInterceptor(grpclimit.UnaryServerInterceptor(limiter, key)),
//		grpc.StreamInterceptor(grpclimit.StreamServerInterceptor(limiter, key)),
//	)
//
// Every call's response header metadata carries the rate-limit fields
// httplimit.SetHeaders writes (ratelimit-policy, ratelimit,
// x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after).
package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/clientip"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// A KeyFunc says who a call of fullMethod ("/pkg.Service/Method") counts
// against: the peer, an API key in the metadata, a user.
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// ErrNoKey: the call carries nothing to key it by (a missing metadata
// entry). The interceptors answer codes.InvalidArgument unless FirstOf
// falls back.
var ErrNoKey = errors.New("grpclimit: the call has no key")

// ByPeer keys calls by the peer's address, as httplimit.ByClientIP keys a
// request that comes straight from its client: "ip:192.0.2.1", an IPv6
// address per /64 ("ip:2001:db8::/64"). A peer that is not an IP address
// (a Unix socket) fails with ErrNoKey.
func ByPeer() KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", fmt.Errorf("%w: no peer", ErrNoKey)
		}
		k, err := clientip.Resolver{}.Key(&http.Request{RemoteAddr: p.Addr.String()})
		if err != nil {
			return "", fmt.Errorf("%w: peer %s is not an IP address", ErrNoKey, p.Addr)
		}
		return k, nil
	}
}

// ByMetadata keys calls by a metadata entry, such as an API key or a user
// set by an authenticating proxy: "md:", the lower-case name, ':' and the
// (first) value. A call without it (or with it empty) fails with ErrNoKey.
// Only trust an entry that something in front of the limiter sets or
// checks: anyone can send any value.
func ByMetadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if vs := md.Get(name); len(vs) > 0 && strings.TrimSpace(vs[0]) != "" {
			return "md:" + name + ":" + strings.TrimSpace(vs[0]), nil
		}
		return "", fmt.Errorf("%w: no %s metadata", ErrNoKey, name)
	}
}

// ByMethod keys calls by method and by what key says, so one limiter
// counts each method apart: "method:", httplimit.JoinKey(fullMethod), ':'
// and the key.
func ByMethod(key KeyFunc) KeyFunc {
	return func(ctx context.Context, fullMethod string) (string, error) {
		k, err := key(ctx, fullMethod)
		if err != nil {
			return "", err
		}
		return "method:" + httplimit.JoinKey(fullMethod) + ":" + k, nil
	}
}

// FirstOf keys a call by the first key function that finds a key: say
// ByMetadata("x-api-key"), then ByPeer() for anonymous calls. A function
// that fails with anything but ErrNoKey ends the search.
func FirstOf(keys ...KeyFunc) KeyFunc {
	return func(ctx context.Context, fullMethod string) (string, error) {
		err := fmt.Errorf("%w: no key function", ErrNoKey)
		for _, key := range keys {
			var k string
			if k, err = key(ctx, fullMethod); !errors.Is(err, ErrNoKey) {
				return k, err
			}
		}
		return "", err
	}
}

// An Option configures the interceptors.
type Option func(*interceptor)

// WithSkip lets the calls for which skip is true through unlimited and
// with no rate-limit metadata: health checks, reflection, an allowlist.
func WithSkip(skip func(ctx context.Context, fullMethod string) bool) Option {
	return func(i *interceptor) { i.skip = skip }
}

// WithCost sets what a call costs; 1 by default. A cost below 1 or above
// 1e9 is refused with ratelimit.ErrInvalid (codes.Internal).
func WithCost(cost func(ctx context.Context, fullMethod string) int64) Option {
	return func(i *interceptor) { i.cost = cost }
}

// WithCountIf counts a call only when count is true of the code its
// handler returned, such as codes.Unauthenticated for failed logins. As
// httplimit.WithCountIf, the rule reserves the call before the handler
// (ratelimit.Rule.Reserve), so calls that come together cannot pass a
// used-up limit, and gives back one that does not count. An error from
// Reserve goes to the error handler.
func WithCountIf(count func(code codes.Code) bool) Option {
	return func(i *interceptor) { i.countIf = count }
}

// WithDenied replaces the error a denied call gets (DeniedStatus(d).Err()
// by default). The rate-limit metadata is already set.
func WithDenied(denied func(ctx context.Context, d ratelimit.Decision) error) Option {
	return func(i *interceptor) { i.denied = denied }
}

// WithErrorHandler replaces the error a call gets when it cannot be
// decided: the key function or the rule failed (ErrorStatus(err).Err() by
// default).
func WithErrorHandler(fail func(ctx context.Context, err error) error) Option {
	return func(i *interceptor) { i.fail = fail }
}

// UnaryServerInterceptor limits unary calls: for each, key says who it
// counts against and rule decides. A call that passes goes on to the
// handler; one that is denied gets DeniedStatus; one that cannot be
// decided gets ErrorStatus (WithDenied and WithErrorHandler replace them).
// It panics on a nil rule or key.
func UnaryServerInterceptor(rule ratelimit.Rule, key KeyFunc, opts ...Option) grpc.UnaryServerInterceptor {
	i := newInterceptor(rule, key, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var resp any
		err := i.call(ctx, info.FullMethod, func(md metadata.MD) error { return grpc.SetHeader(ctx, md) }, func() error {
			var err error
			resp, err = handler(ctx, req)
			return err
		})
		return resp, err
	}
}

// StreamServerInterceptor limits streams as UnaryServerInterceptor limits
// calls: once, when the stream opens, whatever its messages (a long stream
// holds no capacity; cap streams in flight with ratelimit/inflight).
func StreamServerInterceptor(rule ratelimit.Rule, key KeyFunc, opts ...Option) grpc.StreamServerInterceptor {
	i := newInterceptor(rule, key, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return i.call(ss.Context(), info.FullMethod, ss.SetHeader, func() error { return handler(srv, ss) })
	}
}

// DeniedStatus is the default status of a denied call: codes.ResourceExhausted
// with an errdetails.QuotaFailure naming each limit that denied and, unless
// the call can never pass, an errdetails.RetryInfo with the exact wait
// (the Decision's RetryAfter), its message saying "locked out" for a
// lockout's denial (Decision.LockedOut); or codes.Unavailable when only limits that
// fail closed denied it, because Redis could not be asked (as
// httplimit.ProblemFor answers 503).
func DeniedStatus(d ratelimit.Decision) *status.Status {
	p := httplimit.ProblemFor(d)
	if p.Status == http.StatusServiceUnavailable {
		return status.New(codes.Unavailable, "rate limiter unavailable: "+p.Detail)
	}
	qf := &errdetails.QuotaFailure{}
	for _, name := range p.ViolatedPolicies {
		qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{Subject: name, Description: p.Title})
	}
	by := strings.Join(p.ViolatedPolicies, ", ")
	if d.RetryAfter == ratelimit.Never {
		s, _ := status.New(codes.ResourceExhausted, "rate limit "+by+" exceeded: the call costs more than the limit lets through at once, so it can never pass").WithDetails(qf)
		return s
	}
	what := "exceeded"
	if lockedOut(d) {
		what = "locked out"
	}
	s, _ := status.New(codes.ResourceExhausted, fmt.Sprintf("rate limit %s %s: retry in %s", by, what, d.RetryAfter.Round(time.Millisecond))).
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d.RetryAfter)}, qf)
	return s
}

// lockedOut reports whether a lockout (ratelimit.WithLockout) denied d or
// one of its parts.
func lockedOut(d ratelimit.Decision) bool {
	if d.LockedOut && !d.Allowed {
		return true
	}
	for _, p := range d.Parts {
		if p.LockedOut && !p.Allowed {
			return true
		}
	}
	return false
}

// ErrorStatus is the default status of a call that cannot be decided:
// the error itself when it is a gRPC status already (say, a
// ratelimit.Select refusing an unknown API key with codes.Unauthenticated),
// codes.InvalidArgument for a call without a key (ErrNoKey),
// codes.Unavailable when Redis is unavailable (ratelimit.ErrUnavailable),
// without details, which could expose the store, and codes.Internal
// otherwise: with the reason for a bad configuration (ratelimit.ErrInvalid),
// without it for an error of your own.
func ErrorStatus(err error) *status.Status {
	if s, ok := status.FromError(err); ok {
		return s
	}
	switch {
	case errors.Is(err, ErrNoKey):
		return status.New(codes.InvalidArgument, err.Error())
	case errors.Is(err, ratelimit.ErrUnavailable):
		return status.New(codes.Unavailable, "rate limiter unavailable")
	case errors.Is(err, ratelimit.ErrInvalid):
		return status.New(codes.Internal, err.Error())
	}
	return status.New(codes.Internal, "internal error")
}

type interceptor struct {
	rule    ratelimit.Rule
	key     KeyFunc
	skip    func(context.Context, string) bool
	cost    func(context.Context, string) int64
	countIf func(codes.Code) bool
	denied  func(context.Context, ratelimit.Decision) error
	fail    func(context.Context, error) error
}

func newInterceptor(rule ratelimit.Rule, key KeyFunc, opts []Option) *interceptor {
	if rule == nil || key == nil {
		panic("grpclimit: an interceptor needs a rule and a key function")
	}
	i := &interceptor{
		rule:   rule,
		key:    key,
		denied: func(_ context.Context, d ratelimit.Decision) error { return DeniedStatus(d).Err() },
		fail:   func(_ context.Context, err error) error { return ErrorStatus(err).Err() },
	}
	for _, o := range opts {
		o(i)
	}
	return i
}

// call decides one call or stream, sets the rate-limit metadata with
// setHeader (the reservation's, with WithCountIf), and runs handle if it
// passes.
func (i *interceptor) call(ctx context.Context, method string, setHeader func(metadata.MD) error, handle func() error) error {
	if i.skip != nil && i.skip(ctx, method) {
		return handle()
	}
	key, err := i.key(ctx, method)
	if err != nil {
		return i.fail(ctx, err)
	}
	n := int64(1)
	if i.cost != nil {
		n = i.cost(ctx, method)
	}
	var d ratelimit.Decision
	var res *ratelimit.Reservation
	if i.countIf == nil {
		d, err = i.rule.AllowN(ctx, key, n)
	} else if res, err = i.rule.Reserve(ctx, key, n); err == nil {
		d = res.Decision
	}
	if err != nil {
		return i.fail(ctx, err)
	}
	giveBack := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = res.Cancel(cctx) // a failed give-back leaves the call counted, the safe side
	}
	if md := headerMD(d); md != nil {
		_ = setHeader(md) // fails only once headers are sent, which they cannot be yet
	}
	if !d.Allowed {
		if res != nil {
			giveBack() // what ratelimit.All counted in its other rules
		}
		return i.denied(ctx, d)
	}
	if i.countIf == nil {
		return handle()
	}
	err = handle()
	if !i.countIf(status.Code(err)) {
		giveBack()
	}
	return err
}

// headerMD is what httplimit.SetHeaders writes for d, as metadata.
func headerMD(d ratelimit.Decision) metadata.MD {
	h := http.Header{}
	httplimit.SetHeaders(h, d)
	if len(h) == 0 {
		return nil
	}
	md := make(metadata.MD, len(h))
	for k, v := range h {
		md[strings.ToLower(k)] = v
	}
	return md
}
