// Command luagen turns annotated Redis Lua scripts into typed Go wrappers
// over go-redis v9. See package github.com/redlimit/redlimit/gen for the
// header grammar and the lint.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, for tests. It returns the exit code: 0 done,
// 1 problems in the scripts or stale output, 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	ins, err := readInputs(cfg.inputs)
	if err != nil {
		fmt.Fprintln(stderr, "luagen:", err)
		return 1
	}
	plan, err := makePlan(cfg, ins)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, w := range plan.warnings {
		fmt.Fprintln(stderr, w)
	}
	if cfg.check {
		if stale := plan.check(stdout); stale > 0 {
			fmt.Fprintf(stderr, "luagen: %d generated file(s) out of date; run go generate\n", stale)
			return 1
		}
		return 0
	}
	if err := plan.apply(); err != nil {
		fmt.Fprintln(stderr, "luagen:", err)
		return 1
	}
	return 0
}
