// Command redlimit-rls is a rate limit service for Envoy (RLS v3) that
// reads envoyproxy/ratelimit's configuration and environment and decides
// with redlimit's scripts. See docs/envoy.md in the repository.
//
//	REDIS_SOCKET_TYPE=tcp REDIS_URL=localhost:6379 RUNTIME_ROOT=/data RUNTIME_SUBDIRECTORY=ratelimit redlimit-rls
//
// With -demo it runs on an embedded Redis with an example configuration
// and prints an Envoy snippet and requests to try.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redlimit/redlimit/rls"
)

func main() {
	demo := flag.Bool("demo", false, "run on an embedded Redis (miniredis) with an example configuration")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lookup := os.LookupEnv
	if *demo {
		env, cleanup, err := demoEnv()
		if err != nil {
			fmt.Fprintln(os.Stderr, "redlimit-rls:", err)
			os.Exit(1)
		}
		defer cleanup()
		lookup = func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		}
	}
	s, err := rls.LoadSettings(lookup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redlimit-rls:", err)
		os.Exit(2)
	}
	log := slog.New(handler(s))
	srv, err := rls.Start(ctx, s, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	if *demo {
		printDemo(srv.Addr("grpc"), srv.Addr("http"), s.ConfigDir())
	}
	select {
	case <-ctx.Done():
	case err = <-srv.Err():
		log.Error("a listener failed", "err", err)
	}
	srv.Close()
	if err != nil {
		os.Exit(1)
	}
}

// handler logs as LOG_LEVEL and LOG_FORMAT say.
func handler(s rls.Settings) slog.Handler {
	var level slog.Level
	switch strings.ToUpper(s.LogLevel) {
	case "DEBUG", "TRACE":
		level = slog.LevelDebug
	case "INFO":
		level = slog.LevelInfo
	case "ERROR", "FATAL", "PANIC":
		level = slog.LevelError
	default:
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(s.LogFormat, "json") {
		return slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.NewTextHandler(os.Stderr, opts)
}
