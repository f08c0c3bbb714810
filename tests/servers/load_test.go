package servers

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// TestRealServerHashesTheFiles: SCRIPT LOAD of each file in lua/ on a real
// server answers the SHA1 of the file's bytes, which is the hash the
// bindings send with EVALSHA; and bindings.LoadAll leaves every script in
// the cache of the server and of every cluster master.
func TestRealServerHashesTheFiles(t *testing.T) {
	ctx := context.Background()
	c := standalone(t, 3)
	for name, script := range scripts {
		src, err := os.ReadFile(filepath.Join("..", "..", "lua", name+".lua"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha1.Sum(src)
		loaded, err := c.ScriptLoad(ctx, string(src)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := hex.EncodeToString(sum[:]); loaded != want || script.Hash() != want {
			t.Errorf("%s: SCRIPT LOAD %s, binding hash %s, file SHA1 %s", name, loaded, script.Hash(), want)
		}
	}

	cl := cluster(t)
	if err := cl.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := bindings.LoadAll(ctx, cl); err != nil {
		t.Fatal(err)
	}
	err := cl.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		for name, script := range scripts {
			ok, err := node.ScriptExists(ctx, script.Hash()).Result()
			if err != nil {
				return err
			}
			if !ok[0] {
				t.Errorf("%s: %s not cached after LoadAll", node.Options().Addr, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
