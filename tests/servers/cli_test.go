package servers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedisCLIExample runs docs/algorithms.md's example for other stacks exactly:
// the file itself, through redis-cli --eval, on a real server.
func TestRedisCLIExample(t *testing.T) {
	needReal(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli is not on PATH")
	}
	host, port, _ := strings.Cut(standaloneAddr, ":")
	key := fmt.Sprintf("rl:{user:42}:%d", time.Now().UnixNano())
	out, err := exec.Command(cli, "-h", host, "-p", port, "--eval", filepath.Join("..", "..", "lua", "token_bucket.lua"),
		key, ",", "10", "5", "1000", "0", "smooth", "1", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v\n%s", err, out)
	}
	if got, want := strings.Fields(string(out)), []string{"1", "9", "0", "200"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("redis-cli --eval printed %q, want %q (docs/algorithms.md's example)", got, want)
	}
	key = fmt.Sprintf("rl:{user:7}:%d", time.Now().UnixNano())
	out, err = exec.Command(cli, "-h", host, "-p", port, "--eval", filepath.Join("..", "..", "lua", "gcra.lua"),
		key, ",", "10", "5", "1000", "0", "all", "1", "0", "1", "0", "0", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v\n%s", err, out)
	}
	if got, want := strings.Fields(string(out)), strings.Fields("1 9 0 200 1 8 0 400 1 8 0 400"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("redis-cli --eval printed %q, want %q (docs/algorithms.md's batch example)", got, want)
	}
}
