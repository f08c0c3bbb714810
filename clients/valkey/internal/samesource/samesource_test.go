// Package samesource holds clients/valkey/scripter to clients/rueidis/scripter,
// in a package of its own, so that -update works when the copy is stale
// and would not compile.
package samesource

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite clients/valkey/scripter's files from clients/rueidis/scripter")

// valkey-go is rueidis under other names, so clients/valkey/scripter is
// the rueidis adapter with the names replaced; TestSameAsRueidis holds the
// two to one source (go test -update here rewrites the copy).
var renames = strings.NewReplacer(
	"github.com/redis/rueidis", "github.com/valkey-io/valkey-go",
	"clients/rueidis", "clients/valkey",
	"rueidis.RedisMessage", "valkey.ValkeyMessage",
	"NonRedisError", "NonValkeyError",
	"rueidis.", "valkey.",
	"rueidis", "valkey-go",
)

func TestSameAsRueidis(t *testing.T) {
	from := filepath.Join("..", "..", "..", "rueidis", "scripter")
	to := filepath.Join("..", "..", "scripter")
	for _, name := range []string{"scripter.go", "scripter_test.go", "example_test.go"} {
		src, err := os.ReadFile(filepath.Join(from, name))
		if os.IsNotExist(err) {
			t.Skipf("%s is not here (not a checkout of the repository)", from)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []byte("// Code generated from clients/rueidis/scripter/" + name + " by clients/valkey/internal/samesource (go test -update). DO NOT EDIT.\n\n" + renames.Replace(string(src)))
		if *update {
			if err := os.WriteFile(filepath.Join(to, name), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(filepath.Join(to, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from clients/rueidis/scripter/%s with the names replaced (%v): run go test -update in clients/valkey/internal/samesource", name, name, err)
		}
	}
}
