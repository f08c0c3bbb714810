package servers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/tests/scenario"
)

// TestNoScriptReadsAnothersState is tests/lua's matrix (issue 15.1) on a
// real redis-server, through the scripts the bindings embed: for every
// ordered pair of scripts, the first writes its state, and every call of
// the second on that key is refused with the code scenario.CrossCode names
// and leaves the key as it was: its value, and its expiry to the ms
// (PEXPIRETIME, which the server keeps as an absolute instant).
func TestNoScriptReadsAnothersState(t *testing.T) {
	c := standalone(t, 3)
	ctx := context.Background()
	run := fmt.Sprintf("cross%d:", time.Now().UnixNano())
	refused := 0
	for _, writer := range scenario.Crossings() {
		for _, reader := range scenario.Crossings() {
			if writer.Script == reader.Script {
				continue
			}
			key := run + writer.Script + ":" + reader.Script
			if err := call(ctx, c, writer.Script, key, writer.Calls[0]); err != nil {
				t.Fatalf("%s %v on an empty key: %v", writer.Script, writer.Calls[0], err)
			}
			code := scenario.CrossCode(writer, reader)
			for _, argv := range reader.Calls {
				before := keyState(t, c, key)
				err := call(ctx, c, reader.Script, key, argv)
				if code == "" {
					if err != nil {
						t.Errorf("%s %v on %s's state: %v, want it read as its own", reader.Script, argv, writer.Script, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), code) {
					t.Errorf("%s %v on %s's state: %v, want %s", reader.Script, argv, writer.Script, err, code)
				}
				if after := keyState(t, c, key); after != before {
					t.Errorf("%s %v changed %s's state: %s -> %s", reader.Script, argv, writer.Script, before, after)
				}
				refused++
			}
		}
	}
	if refused < 150 {
		t.Errorf("only %d refusals checked", refused)
	}
}

// call runs one script on key, raw ARGV, as another stack would send it.
func call(ctx context.Context, c *redis.Client, script, key string, argv []string) error {
	args := make([]any, len(argv))
	for i, a := range argv {
		args[i] = a
	}
	return scripts[script].Run(ctx, c, []string{key}, args...).Err()
}

// keyState is a key's type, content and absolute expiry in ms.
func keyState(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	switch typ {
	case "string":
		v, err = c.Get(ctx, key).Result()
	case "zset":
		v, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
	case "hash":
		v, err = c.HGetAll(ctx, key).Result()
	}
	if err != nil {
		t.Fatal(err)
	}
	at, err := c.Do(ctx, "PEXPIRETIME", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %v expires at %d ms", typ, v, at)
}

// TestEarlierLayoutsAreRefused is tests/lua's test of the same name on a
// real redis-server: every layout an earlier version of a script wrote,
// at this server's clock, meets every call of every script, which refuses
// it and leaves the key as it was, value and expiry to the ms.
func TestEarlierLayoutsAreRefused(t *testing.T) {
	c := standalone(t, 3)
	ctx := context.Background()
	run := fmt.Sprintf("earlier%d:", time.Now().UnixNano())
	refused := 0
	for i, e := range scenario.Earliers() {
		for _, reader := range scenario.Crossings() {
			key := fmt.Sprintf("%s%d:%s", run, i, reader.Script)
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range e.Commands(key, now.UnixMicro()) {
				args := make([]any, len(cmd))
				for j, a := range cmd {
					args[j] = a
				}
				if err := c.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("%s: %v: %v", e.Name, cmd, err)
				}
			}
			code := scenario.EarlierCode(e, reader)
			for _, argv := range reader.Calls {
				before := keyState(t, c, key)
				err := call(ctx, c, reader.Script, key, argv)
				if err == nil || !strings.Contains(err.Error(), code) {
					t.Errorf("%s on %s: %v, want %s", reader.Script, e.Name, err, code)
				}
				if after := keyState(t, c, key); after != before {
					t.Errorf("%s %v changed %s: %s -> %s", reader.Script, argv, e.Name, before, after)
				}
				refused++
			}
		}
	}
	calls := 0
	for _, c := range scenario.Crossings() {
		calls += len(c.Calls)
	}
	if want := len(scenario.Earliers()) * calls; refused != want {
		t.Errorf("only %d refusals checked, want %d", refused, want)
	}
}
