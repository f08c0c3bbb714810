// Package samesource holds adapters/echov4/echolimit to adapters/echolimit
// (Echo v5), in a package of its own, so that -update works when the copy
// is stale and would not compile.
package samesource

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite adapters/echov4/echolimit's shared files from adapters/echolimit")

// Echo v4 and v5 differ in the import path, in the context (an interface
// in v4, *echo.Context in v5) and in what echo4.go and echo5.go hold; the
// rest is one source, written for v5, with these names replaced.
var renames = strings.NewReplacer(
	`"github.com/labstack/echo/v5"`, `"github.com/labstack/echo/v4"`,
	"*echo.Context", "echo.Context",
	`"github.com/redlimit/redlimit/adapters/echolimit"`, `"github.com/redlimit/redlimit/adapters/echov4/echolimit"`,
)

// shared are the files made from v5's.
var shared = []string{"echolimit.go", "echo_test.go", "example_test.go", "bench_test.go"}

func TestSameAsEchoV5(t *testing.T) {
	from := filepath.Join("..", "..", "..", "..", "echolimit")
	to := filepath.Join("..", "..")
	if _, err := os.Stat(from); os.IsNotExist(err) {
		t.Skipf("%s is not here (not a checkout of the repository)", from)
	}
	for _, name := range shared {
		// In a checkout, a shared file that is gone (renamed in v5) fails.
		src, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		want := []byte("// Code generated from adapters/echolimit/" + name + " by adapters/echov4/echolimit/internal/samesource (go test -update). DO NOT EDIT.\n\n" + renames.Replace(string(src)))
		if *update {
			if err := os.WriteFile(filepath.Join(to, name), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(filepath.Join(to, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from adapters/echolimit/%s with the names replaced (%v): run go test -update in adapters/echov4/echolimit/internal/samesource", name, name, err)
		}
	}
}
