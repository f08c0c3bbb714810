package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/redlimit/redlimit/gen"
)

const usage = `usage: luagen [-o dir] [-pkg name] [-manifest file] [-check] script.lua|dir ...

luagen reads annotated Redis Lua scripts (files, or folders of *.lua) and
writes typed Go wrappers over go-redis v9: one <name>.lua.go per script and
a shared luagen.go. It checks each header against its body and lints the
Lua; problems are printed as file:line: message and nothing is written.

Header (the leading --- lines; order is position: the k-th @arg is ARGV[k]):
  --- Summary text, one or more lines.
  --- @key    name          [doc]
  --- @arg    name  type    [doc]
  --- @return name  type    [doc]
  --- @error  CODE          [doc]      becomes a sentinel: BADARG -> ErrBadArg
  --- @flags  no-writes,...
  Types: int float bool string; durations ms us s (time.Duration); instants
  unix_ms unix_us unix_s (time.Time, zero = 0); enum(a|b) (a Go string type
  with constants). Numbers, durations and instants take bounds, checked in
  Go before the call: int[1..1e9], ms[1..], unix_us[..2^52].
  A ... before the last @key/@arg name makes it variadic; before the last
  @return name it collects the rest of the reply.

Lint checks (silence one on purpose with a trailing comment on the line
the message names, e.g.  x = 1 -- luagen:ignore global; the #! line takes
no comment, so "-- luagen:ignore shebang" works on any line):
%s
Flags:
`

type config struct {
	out, pkg, manifest string
	check              bool
	inputs             []string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("luagen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.out, "o", ".", "output `dir`ectory for the Go files")
	fs.StringVar(&cfg.pkg, "pkg", "", "Go package `name` (default: the output directory's name)")
	fs.StringVar(&cfg.manifest, "manifest", "", "also write a JSON manifest of the scripts to `file`")
	fs.BoolVar(&cfg.check, "check", false, "write nothing; print a diff and exit 1 when the output is stale")
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, gen.ChecksText("  "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.inputs = fs.Args()
	if len(cfg.inputs) == 0 {
		fmt.Fprintln(stderr, "luagen: no scripts given")
		fs.Usage()
		return cfg, errors.New("no inputs")
	}
	if cfg.pkg == "" {
		abs, err := filepath.Abs(cfg.out)
		if err != nil {
			return cfg, err
		}
		cfg.pkg = strings.ToLower(strings.NewReplacer("-", "", ".", "").Replace(filepath.Base(abs)))
	}
	return cfg, nil
}
