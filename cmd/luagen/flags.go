package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

const usage = `usage: luagen [-o dir] [-pkg name] [-manifest file] [-check] script.lua|dir ...

luagen reads annotated Redis Lua scripts (files, or folders of *.lua) and
writes typed Go wrappers over go-redis v9: one <name>.lua.go per script and
a shared luagen.go. It checks each header against its body and lints the
Lua; problems are printed as file:line: message and nothing is written.

Header (the leading --- lines; order is position: the k-th @arg is ARGV[k]):
  --- Summary text, one or more lines.
  --- @key    name          [doc]
  --- @arg    name  type    [doc]      types: int float bool string ms us s
  --- @return name  type    [doc]
  --- @error  CODE          [doc]      becomes a sentinel: BADARG -> ErrBadArg
  --- @flags  no-writes,...
  A ... before the last @key/@arg name makes it variadic; before the last
  @return name it collects the rest of the reply.

Lint checks (silence one on purpose with a trailing comment on the line
the message names, e.g.  x = 1 -- luagen:ignore global; the #! line takes
no comment, so "-- luagen:ignore shebang" works on any line):
  global         assignment to a global, or a function declared without local
  goto           goto or labels (Lua 5.2; Redis runs Lua 5.1)
  shebang        a #! line on a script without @flags no-writes
  key-arg        a redis.call/pcall key argument not taken from KEYS
  keys-scan      the KEYS or SCAN command
  number-string  tostring() or .. on a number expression (Redis prints %.14g)
  library        os, io, debug, package, require, load, loadstring, dofile, loadfile
  multi-assign   a, b = b, a: gopher-lua (miniredis) assigns as it goes, Redis does not

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
		io.WriteString(stderr, usage)
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
