package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// functionsServer is a real redis-server with no library, or nil (and the
// test skipped, or failed under CI) without one. miniredis has no
// Functions.
func functionsServer(t *testing.T) *redis.Client {
	addr := redisserver.Maybe(t)
	if addr == "" {
		t.Skip("no redis-server")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	if err := c.FunctionFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// A call through WithFunctions loads a missing library and runs as FCALL
// (FCALL_RO for no-writes), singly and in a Batch; CheckFunctions says
// missing, then nothing; other code under the library's name is stale to
// calls and CheckFunctions, and LoadFunctions replaces it.
func TestFunctions(t *testing.T) {
	ctx := context.Background()
	c := functionsServer(t)
	if err := CheckFunctions(ctx, c); !errors.Is(err, ErrFunctionsMissing) {
		t.Fatalf("CheckFunctions before any call: %v", err)
	}
	fc := WithFunctions(c)
	if got, err := run(ctx, fc, echoCall("a"), echoDecode); err != nil || !cmp.Equal(got, []string{"a"}) {
		t.Fatalf("first call: %q, %v", got, err)
	}
	if err := CheckFunctions(ctx, c); err != nil {
		t.Fatalf("CheckFunctions after a call: %v", err)
	}
	if n, _ := c.ScriptExists(ctx, echoInfo.script.Hash()).Result(); n[0] {
		t.Errorf("the call went as EVAL, not FCALL")
	}

	c.Set(ctx, "p", "v", 0)
	c.FunctionFlush(ctx)
	b := NewBatch()
	e := queue(b, echoCall("b"), echoDecode)
	p := queue(b, peekCall("p"), peekDecode)
	if err := b.Exec(ctx, fc); err != nil {
		t.Fatalf("Batch after FUNCTION FLUSH: %v", err)
	}
	if got, err := e.Result(); err != nil || !cmp.Equal(got, []string{"b"}) {
		t.Errorf("echo: %q, %v", got, err)
	}
	if got, err := p.Result(); err != nil || got != "v" {
		t.Errorf("peek: %q, %v", got, err)
	}
	if _, err := run(ctx, fc.Pipeline(), echoCall("a"), echoDecode); !errors.Is(err, ErrPipeline) {
		t.Errorf("on a Pipeliner: %v", err)
	}

	// Other code under the name, without our functions.
	other := "#!lua name=" + FunctionsLibrary + "\nredis.register_function('standin_other', function() return 1 end)\n"
	c.FunctionFlush(ctx)
	if err := c.FunctionLoad(ctx, other).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, fc, echoCall("a"), echoDecode); !errors.Is(err, ErrFunctionsStale) {
		t.Errorf("call on a stale library: %v", err)
	}
	if err := CheckFunctions(ctx, c); !errors.Is(err, ErrFunctionsStale) {
		t.Errorf("CheckFunctions on a stale library: %v", err)
	}
	if err := LoadFunctions(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := CheckFunctions(ctx, c); err != nil {
		t.Errorf("CheckFunctions after LoadFunctions: %v", err)
	}
}
