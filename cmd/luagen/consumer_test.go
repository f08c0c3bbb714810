package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// readmeBlocks returns the code blocks docs/luagen.md marks with
// <!-- consumer-test -->, in order: the consumer path as a user reads it.
func readmeBlocks(t *testing.T) (sh [][]string, directive string) {
	t.Helper()
	readme, err := os.ReadFile("../../docs/luagen.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- consumer-test -->\n```(sh|go)\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		if m[1] == "go" {
			directive = strings.TrimSpace(m[2])
			continue
		}
		var cmds []string
		for _, l := range strings.Split(m[2], "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				cmds = append(cmds, l)
			}
		}
		sh = append(sh, cmds)
	}
	if len(sh) != 2 || !strings.HasPrefix(directive, "//go:generate ") {
		t.Fatalf("docs/luagen.md: want two marked sh blocks and a marked //go:generate line, got %q and %q", sh, directive)
	}
	return sh, directive
}

// TestConsumer is what a stranger does, with the README's own commands: a
// fresh module clones redlimit next to itself, adds luagen as a tool from
// the clone and go-redis, writes scripts it has never seen (a folder limits
// whose Go file says package ratelimit; the new grammar; a script named
// info.lua with a key named string; a later read of a bound ARGV), then go
// generate and go build; its own test then runs the generated code on
// miniredis and on a real redis-server.
//
// Two things stand in for the network: git clones the checkout for the
// README's URL (url.<checkout>.insteadOf, so the clone holds what is
// committed), and a file proxy built from the module cache answers
// "latest" for go-redis (with the version this module requires) so `go
// get github.com/redis/go-redis/v9` runs as written without the internet.
func TestConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	sh, directive := readmeBlocks(t)
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "consumer")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	proxy := fileProxy(t, "github.com/redis/go-redis/v9", "v9.7.3")
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=file://"+filepath.ToSlash(proxy)+",off",
		"GOSUMDB=off", "GOTOOLCHAIN=local",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=url."+checkout+".insteadOf", "GIT_CONFIG_VALUE_0=https://github.com/redlimit/redlimit")
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, to), string(b))
	}

	// The stranger's module, before any README step.
	run("go mod init example.com/consumer")
	copyFile("testdata/consumer/quota.lua", "scripts/quota.lua")
	copyFile("testdata/consumer/info.lua", "scripts/info.lua")
	writeFile(t, filepath.Join(dir, "limits/doc.go"), "// Package ratelimit wraps ../scripts.\npackage ratelimit\n\n"+directive+"\n")

	for _, line := range sh[0] { // git clone ...; go mod edit ...; go get -tool ...; go get go-redis
		run(line)
	}
	for _, line := range sh[1] { // go generate ./...; go build ./...
		run(line)
	}
	for _, f := range []string{"limits/quota.lua.go", "limits/info.lua.go", "limits/luagen.go", "limits/scripts.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("go generate did not write %s", f)
		}
	}
	checkManifest(t, filepath.Join(dir, "limits/scripts.json"))
	if b, _ := os.ReadFile(filepath.Join(dir, "limits/luagen.go")); !strings.Contains(string(b), "\npackage ratelimit\n") {
		t.Errorf("generated package is not ratelimit, the package of limits/doc.go")
	}

	// The stranger's own test of the generated code.
	copyFile("testdata/consumer/quota_test.go.txt", "limits/quota_test.go")
	run("go get github.com/alicebob/miniredis/v2@v2.40.0")
	run("go vet ./...")
	if addr := redisserver.Maybe(t); addr != "" {
		env = append(env, "CONSUMER_REDIS_ADDR="+addr)
	}
	out := run("go test -count=1 -v ./...")
	for _, want := range []string{"--- PASS: TestQuota/miniredis", "--- PASS: TestQuota/redis-server"} {
		if !strings.Contains(out, want) && (strings.Contains(want, "miniredis") || redisserver.Required()) {
			t.Errorf("go test output lacks %q:\n%s", want, out)
		}
	}
	// Up to date right after generating, so the README's CI check passes.
	run("go tool luagen -check -o limits -manifest limits/scripts.json scripts")
}

// fileProxy makes a GOPROXY folder that serves one module at one version,
// from the module cache.
func fileProxy(t *testing.T, module, version string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", filepath.FromSlash(module), "@v")
	proxy := t.TempDir()
	to := filepath.Join(proxy, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".info", ".mod", ".zip"} {
		b, err := os.ReadFile(filepath.Join(from, version+ext))
		if err != nil {
			t.Fatalf("%s@%s is not in the module cache (go mod download): %v", module, version, err)
		}
		if err := os.WriteFile(filepath.Join(to, version+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(to, "list"), []byte(fmt.Sprintln(version)), 0o644); err != nil {
		t.Fatal(err)
	}
	return proxy
}
