package grpclimit_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/redlimit/redlimit/adapters/grpclimit"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// health is the service under test: Check answers SERVING, or
// Unauthenticated unless the call's "password" metadata is "right" (a
// login, for WithCountIf); Watch streams SERVING once and ends.
type health struct {
	healthpb.UnimplementedHealthServer
	login bool
}

func (h health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if md, _ := metadata.FromIncomingContext(ctx); h.login && strings.Join(md.Get("password"), "") != "right" {
		return nil, status.Error(codes.Unauthenticated, "wrong password")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (health) Watch(_ *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// serve starts a gRPC server on a loopback port of its own with the
// interceptors over rule, and returns a client of it. Both stop when the
// test ends.
func serve(t *testing.T, rule ratelimit.Rule, key grpclimit.KeyFunc, login bool, opts ...grpclimit.Option) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(grpclimit.UnaryServerInterceptor(rule, key, opts...)),
		grpc.StreamInterceptor(grpclimit.StreamServerInterceptor(rule, key, opts...)),
	)
	healthpb.RegisterHealthServer(srv, health{login: login})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.Stop(); <-done })
	return healthpb.NewHealthClient(conn)
}

func newLimiter(t *testing.T, rdb ratelimit.Client, name string, limit ratelimit.Limit, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(rdb, name, limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func check(c healthpb.HealthClient, md ...string) (metadata.MD, error) {
	var header metadata.MD
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), md...), 10*time.Second)
	defer cancel()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	return header, err
}

func watch(c healthpb.HealthClient) (metadata.MD, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return nil, err
	}
	if _, err := s.Recv(); err != nil {
		return nil, err
	}
	return s.Header()
}

// details reads a status's RetryInfo and QuotaFailure, as a client would.
func details(t *testing.T, err error) (retry *errdetails.RetryInfo, quota *errdetails.QuotaFailure) {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.QuotaFailure:
			quota = d
		default:
			t.Errorf("unexpected detail %T", d)
		}
	}
	return retry, quota
}

// Unary calls and streams against a limit of 3 a minute per method and
// peer: the 4th of each is ResourceExhausted with the wait in RetryInfo and
// the limit in QuotaFailure, read by a real client from a real server;
// every call's header metadata carries httplimit's fields.
func TestDenied(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()
	c := serve(t, newLimiter(t, rdb, "api", ratelimit.PerMinute(3)), grpclimit.ByMethod(grpclimit.ByPeer()), false)
	for _, call := range []struct {
		name string
		do   func() (metadata.MD, error)
	}{
		{"unary", func() (metadata.MD, error) { return check(c) }},
		{"stream", func() (metadata.MD, error) { return watch(c) }},
	} {
		t.Run(call.name, func(t *testing.T) {
			start := time.Now()
			for i, remaining := range []string{"2", "1", "0"} {
				md, err := call.do()
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got := strings.Join(md.Get("ratelimit-policy"), ","); got != `"api";q=3;w=60` {
					t.Errorf("call %d: ratelimit-policy %q", i, got)
				}
				if got := strings.Join(md.Get("x-ratelimit-remaining"), ","); got != remaining {
					t.Errorf("call %d: x-ratelimit-remaining %q, want %s", i, got, remaining)
				}
				if got := strings.Join(md.Get("ratelimit"), ","); !strings.HasPrefix(got, `"api";r=`+remaining+";t=") {
					t.Errorf("call %d: ratelimit %q", i, got)
				}
			}
			md, err := call.do()
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("4th call: %v, want ResourceExhausted", err)
			}
			// The 4th may pass 20 s after the 1st (3 a minute): the wait
			// is 20 s less the time the calls took.
			elapsed := time.Since(start)
			retry, quota := details(t, err)
			if retry == nil {
				t.Fatal("no RetryInfo")
			}
			delay := retry.RetryDelay.AsDuration()
			if delay < 20*time.Second-elapsed || delay > 20*time.Second {
				t.Errorf("RetryInfo %v, want a delay in [20 s - %v, 20 s]", delay, elapsed)
			}
			if quota == nil || len(quota.Violations) != 1 || quota.Violations[0].Subject != "api" {
				t.Errorf("QuotaFailure %v, want the violation of api", quota)
			}
			if msg, want := status.Convert(err).Message(), "rate limit api exceeded: retry in "+delay.Round(time.Millisecond).String(); msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
			if call.name == "unary" { // a stream's header is gone with its error
				want := strconv.FormatInt(int64((delay+time.Second-1)/time.Second), 10)
				if got := strings.Join(md.Get("retry-after"), ","); got != want {
					t.Errorf("retry-after %q, want %s (the delay in whole seconds, rounded up)", got, want)
				}
			}
		})
	}
}

// A lockout's denial says "locked out" rather than "exceeded", alone or
// as the part of several limits that denied.
func TestDeniedLockedOut(t *testing.T) {
	login := ratelimit.Decision{Name: "login", Limit: ratelimit.PerMinute(5), RetryAfter: time.Hour, ResetAfter: time.Hour, LockedOut: true, Source: "lockout"}
	api := ratelimit.Decision{Allowed: true, Name: "api", Limit: ratelimit.PerMinute(100), Remaining: 99, ResetAfter: time.Second}
	both := login
	both.Parts = []ratelimit.Decision{api, login}
	for _, d := range []ratelimit.Decision{login, both} {
		s := grpclimit.DeniedStatus(d)
		if want := "rate limit login locked out: retry in 1h0m0s"; s.Code() != codes.ResourceExhausted || s.Message() != want {
			t.Errorf("%v: %v %q, want %q", d, s.Code(), s.Message(), want)
		}
	}
	login.LockedOut = false
	if s := grpclimit.DeniedStatus(login); !strings.Contains(s.Message(), "login exceeded") {
		t.Errorf("not locked out: %q", s.Message())
	}
}

func TestKeysAndRules(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	defer rdb.Close()

	t.Run("skip", func(t *testing.T) {
		l := newLimiter(t, rdb, "skip", ratelimit.PerMinute(1))
		c := serve(t, l, grpclimit.ByPeer(), false, grpclimit.WithSkip(func(_ context.Context, m string) bool {
			return m == healthpb.Health_Check_FullMethodName
		}))
		for i := 0; i < 3; i++ {
			if md, err := check(c); err != nil || len(md.Get("ratelimit-policy")) != 0 {
				t.Fatalf("skipped call %d: %v, metadata %v", i, err, md)
			}
		}
		if _, err := watch(c); err != nil {
			t.Fatal(err)
		}
		if _, err := watch(c); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a method that is not skipped: %v", err)
		}
	})

	// An allowlisted API key passes with no metadata, an unknown one gets
	// the status Select refused it with, a call without one
	// InvalidArgument; FirstOf falls back to the peer.
	t.Run("select", func(t *testing.T) {
		l := newLimiter(t, rdb, "select", ratelimit.PerMinute(1))
		rule := ratelimit.Select(func(_ context.Context, key string) (ratelimit.Rule, error) {
			switch key {
			case "md:x-api-key:internal":
				return ratelimit.Unlimited, nil
			case "md:x-api-key:free", "ip:127.0.0.1":
				return l, nil
			}
			return nil, status.Error(codes.Unauthenticated, "unknown API key")
		})
		c := serve(t, rule, grpclimit.ByMetadata("X-API-Key"), false)
		for i := 0; i < 3; i++ {
			if md, err := check(c, "x-api-key", "internal"); err != nil || len(md) != 0 && len(md.Get("ratelimit")) != 0 {
				t.Fatalf("allowlisted call %d: %v, metadata %v", i, err, md)
			}
		}
		if _, err := check(c, "x-api-key", "bogus"); status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != "unknown API key" {
			t.Fatalf("unknown key: %v, want Select's Unauthenticated", err)
		}
		if _, err := check(c); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("no key: %v, want InvalidArgument", err)
		}
		if _, err := check(c, "x-api-key", "free"); err != nil {
			t.Fatal(err)
		}
		if _, err := check(c, "x-api-key", "free"); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("free key, 2nd call: %v", err)
		}
		c = serve(t, rule, grpclimit.FirstOf(grpclimit.ByMetadata("x-api-key"), grpclimit.ByPeer()), false)
		if _, err := check(c); err != nil {
			t.Fatalf("anonymous call keyed by peer: %v", err)
		}
		if _, err := check(c); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("anonymous call keyed by peer, 2nd: %v", err)
		}
	})

	// Only failed logins count, and their metadata shows the count; after
	// two, the right password is denied before the handler runs.
	t.Run("count if", func(t *testing.T) {
		l := newLimiter(t, rdb, "login", ratelimit.PerMinute(2))
		c := serve(t, l, grpclimit.ByPeer(), true, grpclimit.WithCountIf(func(code codes.Code) bool { return code == codes.Unauthenticated }))
		for i := 0; i < 4; i++ {
			if _, err := check(c, "password", "right"); err != nil {
				t.Fatalf("good login %d: %v", i, err)
			}
		}
		for i, want := range []codes.Code{codes.Unauthenticated, codes.Unauthenticated, codes.ResourceExhausted} {
			md, err := check(c, "password", "wrong")
			if status.Code(err) != want {
				t.Fatalf("bad login %d: %v, want %v", i, err, want)
			}
			// A counted call's metadata is the count's: the second used up
			// the limit.
			if got, wantR := strings.Join(md.Get("ratelimit"), ","), []string{";r=1;", ";r=0;"}; i < 2 && !strings.Contains(got, wantR[i]) {
				t.Errorf("bad login %d: ratelimit %q, want %s (the count's)", i, got, wantR[i])
			}
		}
		if _, err := check(c, "password", "right"); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("good login after two failures: %v", err)
		}
	})

	// A Rule of the user's own whose Reserve fails: its error, for a call
	// and a stream.
	t.Run("count if, no reservation", func(t *testing.T) {
		refused := status.Error(codes.FailedPrecondition, "no reservations here")
		rule := noReserve{Rule: newLimiter(t, rdb, "noreserve", ratelimit.PerMinute(2)), err: refused}
		c := serve(t, rule, grpclimit.ByPeer(), false, grpclimit.WithCountIf(func(code codes.Code) bool { return code != codes.OK }))
		if _, err := check(c); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("call: %v, want Reserve's FailedPrecondition", err)
		}
		if _, err := watch(c); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("stream: %v, want Reserve's FailedPrecondition", err)
		}
	})

	// A call that costs more than the burst can never pass: no RetryInfo,
	// since waiting would not help.
	t.Run("never", func(t *testing.T) {
		l := newLimiter(t, rdb, "never", ratelimit.PerMinute(2))
		c := serve(t, l, grpclimit.ByPeer(), false, grpclimit.WithCost(func(context.Context, string) int64 { return 3 }))
		_, err := check(c)
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%v, want ResourceExhausted", err)
		}
		if retry, quota := details(t, err); retry != nil || quota == nil {
			t.Errorf("RetryInfo %v, QuotaFailure %v: want no retry, the quota", retry, quota)
		}
		c = serve(t, l, grpclimit.ByPeer(), false, grpclimit.WithCost(func(context.Context, string) int64 { return 0 }))
		if _, err := check(c); status.Code(err) != codes.Internal || !strings.Contains(status.Convert(err).Message(), "cost") {
			t.Fatalf("cost 0: %v, want Internal naming the cost", err)
		}
	})

	t.Run("key error", func(t *testing.T) {
		l := newLimiter(t, rdb, "keyerr", ratelimit.PerMinute(2))
		c := serve(t, l, func(context.Context, string) (string, error) { return "", errors.New("secret") }, false)
		if _, err := check(c); status.Code(err) != codes.Internal || strings.Contains(err.Error(), "secret") {
			t.Fatalf("%v, want Internal without the error's text", err)
		}
	})
}

// Redis unreachable: each fallback decides, for unary calls and
// streams alike.
func TestFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	ln.Close()
	defer down.Close()
	for _, tc := range []struct {
		name     string
		fallback ratelimit.Fallback
		want     []codes.Code
	}{
		{"none", ratelimit.Fallback{}, []codes.Code{codes.Unavailable}},
		{"open", ratelimit.FailOpen, []codes.Code{codes.OK, codes.OK, codes.OK}},
		{"closed", ratelimit.FailClosed, []codes.Code{codes.Unavailable}},
		{"local", ratelimit.FailLocal(1), []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []ratelimit.Option
			if tc.fallback != (ratelimit.Fallback{}) {
				opts = append(opts, ratelimit.WithFallback(tc.fallback))
			}
			l := newLimiter(t, down, "down", ratelimit.PerMinute(2), opts...)
			c := serve(t, l, grpclimit.ByMethod(grpclimit.ByPeer()), false)
			for _, do := range []func() (metadata.MD, error){func() (metadata.MD, error) { return check(c) }, func() (metadata.MD, error) { return watch(c) }} {
				for i, want := range tc.want {
					if _, err := do(); status.Code(err) != want {
						t.Fatalf("call %d: %v, want %v", i, err, want)
					} else if want == codes.Unavailable && strings.Contains(err.Error(), ln.Addr().String()) {
						t.Fatalf("the status tells where the store is: %v", err)
					}
				}
			}
		})
	}
}

// Brute force through WithCountIf on a real Redis: 200 wrong passwords
// from one peer at once, 10 times over, and at most 5 reach the handler
// (each call reserves before it; peeking before and counting after let
// most of them through). A right password gives its unit back.
func TestCountIfConcurrent(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	l := newLimiter(t, rdb, "login", ratelimit.Per(5, 15*time.Minute))
	const key = "login"
	byName := func(context.Context, string) (string, error) { return key, nil }
	c := serve(t, l, byName, true, grpclimit.WithCountIf(func(code codes.Code) bool { return code == codes.Unauthenticated }))
	for run := 0; run < 10; run++ {
		if err := l.Reset(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := check(c, "password", "right"); err != nil {
			t.Fatalf("run %d: the right password: %v", run, err)
		}
		if d, err := l.Peek(ctx, key); err != nil || d.Remaining != 5 {
			t.Fatalf("run %d: after a success %d left (%v), want 5", run, d.Remaining, err)
		}
		var reached, denied atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch _, err := check(c, "password", "wrong"); status.Code(err) {
				case codes.Unauthenticated:
					reached.Add(1)
				case codes.ResourceExhausted:
					denied.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := reached.Load(); n != 5 || denied.Load() != 195 {
			t.Fatalf("run %d: %d of 200 wrong passwords reached the handler and %d were denied, want 5 and 195", run, n, denied.Load())
		}
	}
}

// noReserve is a Rule of the user's own whose Reserve fails with err.
type noReserve struct {
	ratelimit.Rule
	err error
}

func (r noReserve) Reserve(context.Context, string, int64) (*ratelimit.Reservation, error) {
	return nil, r.err
}
