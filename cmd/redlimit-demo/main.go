// Command redlimit-demo serves a web page that opens on the compare view:
// one limit and one traffic pattern (a burst, steady traffic over the rate,
// the boundary attack on a fixed window, a trickle, or your own taps) run
// through all seven algorithms at once, one lane each, decided by the real
// scripts (compare.go). Below it, pick one algorithm and its limit, send
// real requests through the ratelimit middleware, and watch each one
// allowed or denied, with its response headers, and a live chart of
// decisions and remaining capacity.
//
//	make demo                                   # or: go run ./cmd/redlimit-demo
//	go run ./cmd/redlimit-demo -redis 127.0.0.1:6379
//	go run ./cmd/redlimit-demo -listen 127.0.0.1:0   # any free port
//
// It runs on an embedded miniredis unless -redis names a real server, and
// listens on 127.0.0.1 only. Ctrl-C stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/preflight"
)

func main() {
	redisAddr := flag.String("redis", "", "address of a real Redis (default: an embedded miniredis)")
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve the page on (port 0 picks a free one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if err := run(ctx, *redisAddr, *listen, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves the demo until ctx ends (Ctrl-C), then shuts the server down
// and lets requests in flight finish.
func run(ctx context.Context, redisAddr, listen string, out io.Writer) error {
	rdb, backend, closeRedis, err := connect(redisAddr)
	if err != nil {
		return err
	}
	defer closeRedis()

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("%w (pick another address with -listen 127.0.0.1:0)", err)
	}
	handler := newServer(rdb, backend)
	defer handler.Close()
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// The browser test reads this line for the address.
	fmt.Fprintf(out, "redlimit demo: http://%s/ (Redis: %s); Ctrl-C stops it\n", ln.Addr(), backend)
	if redisAddr != "" { // what a real Redis's configuration risks (docs/operations.md)
		fs, err := preflight.Check(ctx, rdb)
		for _, f := range fs {
			fmt.Fprintln(out, "preflight:", f)
		}
		if err != nil {
			fmt.Fprintln(out, "preflight:", err)
		}
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// connect returns a client of the Redis at addr, or of an embedded
// miniredis when addr is empty. The miniredis keeps real time: its TIME
// command and its TTLs follow the wall clock as long as SetTime is never
// called (miniredis's TIME follows SetTime, not FastForward), so the
// scripts' server clock moves as on a real server and keys expire.
func connect(addr string) (rdb *redis.Client, backend string, closeAll func(), err error) {
	if addr == "" {
		m, err := miniredis.Run()
		if err != nil {
			return nil, "", nil, err
		}
		m.ClockTTL(true)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		return rdb, "embedded miniredis", func() { rdb.Close(); m.Close() }, nil
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		rdb.Close()
		return nil, "", nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return rdb, "redis-server at " + addr, func() { rdb.Close() }, nil
}
