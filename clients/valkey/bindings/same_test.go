package bindings_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite bindings_test.go from clients/rueidis/bindings")

// The generated code over valkey-go is luagen -client valkey; its test is
// the rueidis one with valkey-go's names, held to it here (go test -update
// rewrites it).
var renames = strings.NewReplacer(
	"github.com/redis/rueidis", "github.com/valkey-io/valkey-go",
	"clients/rueidis", "clients/valkey",
	"rueidis.RedisError", "valkey.ValkeyError",
	"rueidis.", "valkey.",
	"rueidisErr", "valkeyErr",
	"-client rueidis", "-client valkey",
	`"rueidis`, `"valkey`,
)

func TestSameAsRueidis(t *testing.T) {
	const name = "bindings_test.go"
	src, err := os.ReadFile(filepath.Join("..", "..", "rueidis", "bindings", name))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("// Code generated from clients/rueidis/bindings/" + name + " by TestSameAsRueidis (go test -update). DO NOT EDIT.\n\n" + renames.Replace(string(src)))
	if *update {
		if err := os.WriteFile(name, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s differs from clients/rueidis/bindings/%s with valkey-go's names (%v): run go test -update -run TestSameAsRueidis in clients/valkey/bindings", name, name, err)
	}
}
