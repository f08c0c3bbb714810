package grpclimit_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/redlimit/redlimit/adapters/grpclimit"
	"github.com/redlimit/redlimit/ratelimit"
)

// Three calls a minute per method and peer; the client of the fourth
// reads when to retry from the status details.
func Example() {
	rdb := exampleRedis() // redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(3))
	if err != nil {
		log.Fatal(err)
	}
	key := grpclimit.ByMethod(grpclimit.ByPeer())
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(grpclimit.UnaryServerInterceptor(limiter, key)),
		grpc.StreamInterceptor(grpclimit.StreamServerInterceptor(limiter, key)),
	)
	healthpb.RegisterHealthServer(srv, health{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for i := 0; i < 4; i++ {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		s := status.Convert(err)
		fmt.Print(s.Code())
		for _, d := range s.Details() {
			if retry, ok := d.(*errdetails.RetryInfo); ok {
				fmt.Print(", retry in ", retry.RetryDelay.AsDuration())
			}
		}
		fmt.Println()
	}
	// Output:
	// OK
	// OK
	// OK
	// ResourceExhausted, retry in 20s
}

// exampleRedis is a miniredis whose clock stands still, so that the
// example prints exact waits.
func exampleRedis() *redis.Client {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return redis.NewClient(&redis.Options{Addr: m.Addr()})
}
