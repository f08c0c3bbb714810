package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsumer is what a stranger does: a new module, luagen added as a
// tool, an annotated script, go generate, and a test of the generated code
// against miniredis.
func TestConsumer(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, to), string(b))
	}
	// go 1.24 for the tool directive.
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/consumer\n\ngo 1.24\n\n"+
		"require github.com/redlimit/redlimit v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/redlimit/redlimit => "+checkout+"\n")
	// The checkout's go.sum vouches for the same module versions, so nothing
	// needs the checksum database (which this test keeps offline, below).
	copyFile(filepath.Join(checkout, "go.sum"), "go.sum")
	copyFile("testdata/consumer/quota.lua", "scripts/quota.lua")
	copyFile("testdata/consumer/quota_test.go.txt", "limits/quota_test.go")
	writeFile(t, filepath.Join(dir, "limits/doc.go"), "// Package limits wraps ../scripts.\npackage limits\n\n"+
		"//go:generate go tool luagen -o . -manifest scripts.json ../scripts\n")

	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Every module needed is already in the module cache: building this
		// test put it there. GOPROXY=off keeps the test offline, and stops go
		// from asking the proxy whether github.com/redlimit/redlimit/cmd/luagen
		// is a module of its own.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("get", "-tool", "github.com/redlimit/redlimit/cmd/luagen")
	goCmd("get", "github.com/alicebob/miniredis/v2@v2.40.0", "github.com/redis/go-redis/v9@v9.7.3")
	goCmd("generate", "./...")
	for _, f := range []string{"limits/quota.lua.go", "limits/luagen.go", "limits/scripts.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("go generate did not write %s", f)
		}
	}
	goCmd("vet", "./...")
	goCmd("test", "-count=1", "./...")
	// Up to date right after generating, so -check passes.
	goCmd("tool", "luagen", "-check", "-o", "limits", "-pkg", "limits", "-manifest", "limits/scripts.json", "scripts")
}
