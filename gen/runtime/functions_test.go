package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

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

// evilLibrary registers name, which one of ours is called too, in a
// library of its own; its function marks that it ran.
func evilLibrary(name string) string {
	return "#!lua name=evil\nredis.register_function('" + name + "', function(keys, args) redis.call('SET', 'evil ran', 1) return {'evil'} end)\n"
}

// Another library that holds one of our functions' names (in any case:
// Redis compares them without it) is never run by a call, before or after
// ours was loaded: calls, Batch, LoadFunctions and CheckFunctions all
// return a *FunctionsConflictError naming it, and nothing of ours is
// loaded over it. After it is deleted, calls load ours and run.
func TestFunctionsConflict(t *testing.T) {
	ctx := context.Background()
	c := functionsServer(t)
	ran := func() bool { return c.Exists(ctx, "evil ran").Val() == 1 }
	conflict := func(what string, err error) {
		t.Helper()
		var ce *FunctionsConflictError
		if !errors.Is(err, ErrFunctionsConflict) || !errors.As(err, &ce) || ce.Library != "evil" || ce.Function != "standin_echo" {
			t.Errorf("%s: err = %v, want a *FunctionsConflictError naming evil", what, err)
		}
	}

	// Before ours.
	if err := c.FunctionLoad(ctx, evilLibrary("STANDIN_ECHO")).Err(); err != nil {
		t.Fatal(err)
	}
	fc := WithFunctions(c)
	_, err := run(ctx, fc, echoCall("a"), echoDecode)
	conflict("call", err)
	b := NewBatch()
	p := queue(b, echoCall("a"), echoDecode)
	conflict("Batch.Exec", b.Exec(ctx, fc))
	_, err = p.Result()
	conflict("Pending", err)
	conflict("CheckFunctions", CheckFunctions(ctx, c))
	conflict("LoadFunctions", LoadFunctions(ctx, c))
	if ran() {
		t.Fatal("a call ran the other library's function")
	}
	if libs := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: FunctionsLibrary}).Val(); len(libs) != 0 {
		t.Errorf("ours was loaded beside it: %v", libs)
	}

	// After ours: the library is loaded and checked, then taken away and
	// the name registered by another; the next check (FunctionsRecheck
	// after the last, here made due at once) refuses it.
	c.FunctionDelete(ctx, "evil")
	if _, err := run(ctx, fc, echoCall("a"), echoDecode); err != nil {
		t.Fatalf("after FUNCTION DELETE evil: %v", err)
	}
	if left := time.Until(time.Unix(0, fc.own.node("").until.Load())); left <= 0 || left > FunctionsRecheck {
		t.Errorf("next check in %v, want within FunctionsRecheck (%v)", left, FunctionsRecheck)
	}
	c.FunctionDelete(ctx, FunctionsLibrary)
	if err := c.FunctionLoad(ctx, evilLibrary("standin_echo")).Err(); err != nil {
		t.Fatal(err)
	}
	fc.own.node("").until.Store(0)
	_, err = run(ctx, fc, echoCall("a"), echoDecode)
	conflict("call after ours", err)
	if ran() {
		t.Fatal("a call ran the other library's function")
	}
}

// What the ownership check costs a call between two checks (a map lookup,
// a clock read and an atomic load), beside a whole call through the
// library on a real server: go test -bench Functions ./gen/runtime.
func BenchmarkFunctionsOwned(b *testing.B) {
	fc := WithFunctions(redis.NewClient(&redis.Options{}))
	fc.own.node("").until.Store(time.Now().Add(time.Hour).UnixNano())
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if err := fc.owned(ctx, "k"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFunctionsCall(b *testing.B) {
	addr := redisserver.Maybe(b)
	if addr == "" {
		b.Skip("no redis-server")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	fc := WithFunctions(c)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := run(ctx, fc, echoCall("a"), echoDecode); err != nil {
			b.Fatal(err)
		}
	}
}

// slowList is a server that answers FUNCTION LIST late, as a primary under
// load does, or a replica just promoted whose connections are all new.
type slowList struct {
	*redis.Client
	delay time.Duration
}

func (s *slowList) FunctionList(ctx context.Context, q redis.FunctionListQuery) *redis.FunctionListCmd {
	select {
	case <-time.After(s.delay):
		return s.Client.FunctionList(ctx, q)
	case <-ctx.Done():
		cmd := redis.NewFunctionListCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// Callers whose deadlines are shorter than a check of their primary: the
// check goes on past the deadline of the call that began it, so once it
// has passed calls run. (Cut short with that call, no check ever passed,
// and every call on the primary failed for as long as it stayed slow.) A
// call whose deadline ends first gets its context's error.
func TestFunctionsCheckOutlivesItsCaller(t *testing.T) {
	ctx := context.Background()
	c := functionsServer(t)
	if err := LoadFunctions(ctx, c); err != nil {
		t.Fatal(err)
	}
	fc := WithFunctions(&slowList{c, 50 * time.Millisecond})
	calls, ran := 0, 0
	for end := time.Now().Add(2 * time.Second); ran == 0 && time.Now().Before(end); calls++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		got, err := run(cctx, fc, echoCall("a"), echoDecode)
		cancel()
		switch {
		case err == nil && cmp.Equal(got, []string{"a"}):
			ran++
		case !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("call %d: %q, %v; want its reply or its deadline", calls, got, err)
		}
	}
	if ran == 0 {
		t.Fatalf("none of %d calls with 10 ms deadlines ran in 2 s on a primary that answers FUNCTION LIST in 50 ms", calls)
	}
}
