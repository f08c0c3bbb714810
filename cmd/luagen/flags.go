package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/redlimit/redlimit/gen"
)

const usage = `usage: luagen [-o dir] [-pkg name] [-client go-redis|rueidis|valkey] [-manifest file] [-functions library] [-strict] [-check] script.lua|dir ...

luagen reads annotated Redis Lua scripts (files, or folders of *.lua) and
writes typed Go wrappers over go-redis v9: one <name>.lua.go per script and
a shared luagen.go. It checks each header against its body and lints the
Lua: errors are printed as file:line: message and nothing is written;
warnings (advice about a script that works) as file:line: warning: message,
and the code is written (-strict makes them errors).
With -functions it also writes a Redis Functions library of every script,
<library>.functions.lua, and luagen_functions.go to load it and call the
scripts through it with FCALL (WithFunctions, LoadFunctions).

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
  Go before the call: int[1..1e9], ms[1..], unix_us[..2^52] (1e9 is ten to
  the ninth, 2^52 two to the 52nd), and sentinels outside them:
  ms[0..]|never=-1. Strings take a pattern: string/^[a-z0-9_-]{1,64}$/.
  A ... before the last @key/@arg name makes it variadic, ...keys[1..16]
  with a count, ...limits (burst int[1..], period ms[1..]) a record; before
  the last @return name it collects the rest of the reply. The grammar:
  docs/header.md.

Lint checks, with their severity (silence one on purpose with a trailing comment on the line
the message names, e.g.  x = 1 -- luagen:ignore global; the #! line takes
no comment, so "-- luagen:ignore shebang" works on any line):
%s
Flags:
`

type config struct {
	out, pkg, manifest, functions, client string
	check, strict                         bool
	inputs                                []string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("luagen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.out, "o", ".", "output `dir`ectory for the Go files")
	fs.StringVar(&cfg.pkg, "pkg", "", "Go package `name` (default: the package of the output directory's Go files, else $GOPACKAGE when it is the current directory, else its name)")
	fs.StringVar(&cfg.manifest, "manifest", "", "also write a JSON manifest of the scripts to `file`")
	fs.StringVar(&cfg.functions, "functions", "", "also write the Redis Functions `library` of every script, named so, to <library>.functions.lua in the output directory, and the Go to call it with FCALL")
	fs.BoolVar(&cfg.strict, "strict", false, "treat lint warnings as errors")
	fs.StringVar(&cfg.client, "client", "go-redis", "the Redis `client` the code is for: go-redis (github.com/redis/go-redis/v9), rueidis (github.com/redis/rueidis) or valkey (github.com/valkey-io/valkey-go); rueidis and valkey-go need Go 1.25")
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
		pkg, err := packageName(cfg.out)
		if err != nil {
			fmt.Fprintln(stderr, "luagen:", err)
			return cfg, err
		}
		cfg.pkg = pkg
	}
	return cfg, nil
}

// packageName picks the package of the output directory: what its own Go
// files say (a folder limits may hold package ratelimit), else $GOPACKAGE
// when go generate runs in that directory, else the folder's name.
func packageName(out string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(out, "*.go"))
	found := map[string]string{} // package -> a file that declares it
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil || bytes.HasPrefix(src, []byte(gen.Marker+"\n")) {
			continue // luagen's own files may carry an old name
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.PackageClauseOnly)
		if err != nil {
			return "", fmt.Errorf("%s: %v", f, err)
		}
		found[file.Name.Name] = f
	}
	switch len(found) {
	case 1:
		for pkg := range found {
			return pkg, nil
		}
	case 0:
	default:
		var all []string
		for pkg, f := range found {
			all = append(all, pkg+" ("+f+")")
		}
		sort.Strings(all)
		return "", fmt.Errorf("%s holds more than one package: %s; pass -pkg", out, strings.Join(all, ", "))
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	if pkg := os.Getenv("GOPACKAGE"); pkg != "" {
		if wd, err := os.Getwd(); err == nil && wd == abs {
			return pkg, nil
		}
	}
	pkg := strings.ToLower(strings.NewReplacer("-", "", ".", "").Replace(filepath.Base(abs)))
	if !token.IsIdentifier(pkg) {
		return "", fmt.Errorf("cannot name a package after the folder %s; pass -pkg", abs)
	}
	return pkg, nil
}
