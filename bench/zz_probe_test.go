package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestProbe times every PROBE_DIR/*.lua with PROBE_ARGS (space separated)
// like TestAnatomy. Throwaway.
func TestProbe(t *testing.T) {
	dir := os.Getenv("PROBE_DIR")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.lua"))
	sort.Strings(files)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer c.Close()
	for round := 0; round < 5; round++ {
		for _, f := range files {
			src, _ := os.ReadFile(f)
			argsFile := strings.TrimSuffix(f, ".lua") + ".args"
			ab, err := os.ReadFile(argsFile)
			if err != nil {
				ab = []byte(os.Getenv("PROBE_ARGS"))
			}
			var args []any
			for _, a := range strings.Fields(string(ab)) {
				args = append(args, a)
			}
			sha, err := c.ScriptLoad(ctx, string(src)).Result()
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			c.FlushAll(ctx)
			c.ConfigResetStat(ctx)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for sent := 0; sent < probeCalls/4; sent += 32 {
						p := c.Pipeline()
						for range 32 {
							p.EvalSha(ctx, sha, []string{"k"}, args...)
						}
						if _, err := p.Exec(ctx); err != nil {
							t.Errorf("%s: %v", f, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			st, _ := readStats(ctx, c)
			fmt.Printf("PROBE %s %.2f\n", filepath.Base(f), st.usec["evalsha"]/st.calls["evalsha"])
		}
	}
}

var probeCalls = func() int {
	if os.Getenv("PROBE_CALLS") != "" {
		var n int
		fmt.Sscan(os.Getenv("PROBE_CALLS"), &n)
		return n
	}
	return 40000
}()
