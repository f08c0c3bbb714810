package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// echoCall is what luagen would generate for echo.lua: every argument a
// string, and the reply the list of them.
func echoCall(args ...string) *call {
	e := newEncoder(echoInfo, []string{"k"})
	for _, a := range args {
		e.string(a)
	}
	return e.call()
}

func echoDecode(v any) ([]string, error) {
	d := newDecoder(echoInfo, v, 0, true)
	r := rest(&d, 0, 1, "arg", nil, func(i int) string { return d.string(i, "arg") })
	return r, d.err
}

func peekCall(key string) *call { return newEncoder(peekInfo, []string{key}).call() }

func peekDecode(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	d := newDecoder(peekInfo, v, 1, false)
	r := d.string(0, "value")
	return r, d.err
}

// clients is miniredis, and a real redis-server when there is one.
func clients(t *testing.T) map[string]*redis.Client {
	m := miniredis.RunT(t)
	out := map[string]*redis.Client{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if addr := redisserver.Maybe(t); addr != "" {
		out["redis-server"] = redis.NewClient(&redis.Options{Addr: addr})
		out["redis-server without _RO"] = redis.NewClient(&redis.Options{Addr: redisserver.Start(t,
			"--rename-command", "EVALSHA_RO", "", "--rename-command", "EVAL_RO", "")})
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}

// A call survives SCRIPT FLUSH (EVALSHA, NOSCRIPT, EVAL), an error reply
// with an @error code is a *ScriptError matching its sentinel (also after
// an ERR prefix), another error names the script, an ArgError is never
// sent, and a call on a Pipeliner is ErrPipeline.
func TestRun(t *testing.T) {
	ctx := context.Background()
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 2; i++ { // the second time from the script cache
				got, err := run(ctx, c, echoCall("a", "b"), echoDecode)
				if err != nil || !cmp.Equal(got, []string{"a", "b"}) {
					t.Fatalf("run %d: %q, %v", i, got, err)
				}
			}
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// Ten arguments do not fit argBuf: the go-redis path.
			many := strings.Split("a b c d e f g h i j", " ")
			if got, err := run(ctx, c, echoCall(many...), echoDecode); err != nil || !cmp.Equal(got, many) {
				t.Fatalf("after SCRIPT FLUSH, 10 args: %q, %v", got, err)
			}

			_, err := run(ctx, c, echoCall("fail", "BADARG limit is 0"), echoDecode)
			var se *ScriptError
			if !errors.As(err, &se) || !errors.Is(err, ErrBadArg) || se.Message != "limit is 0" || se.Script != "echo.lua" {
				t.Errorf("BADARG: %#v", err)
			}
			_, err = run(ctx, c, echoCall("fail", "OTHER x"), echoDecode)
			if errors.As(err, &se) || !strings.HasPrefix(err.Error(), "echo.lua: ") {
				t.Errorf("OTHER: %v", err)
			}

			cl := echoCall("x")
			cl.err = &ArgError{Script: "echo.lua", Arg: "a", Value: "x", Reason: "is wrong"}
			if _, err := run(ctx, c, cl, echoDecode); err != cl.err {
				t.Errorf("ArgError: %v", err)
			}

			if _, err := run(ctx, c.Pipeline(), echoCall("a"), echoDecode); !errors.Is(err, ErrPipeline) {
				t.Errorf("on a Pipeliner: %v", err)
			}

			// @flags no-writes: EVALSHA_RO where the server has it, EVALSHA
			// where it does not, and a nil reply.
			c.Set(ctx, "p", "v", 0)
			if got, err := run(ctx, c, peekCall("p"), peekDecode); err != nil || got != "v" {
				t.Errorf("peek: %q, %v", got, err)
			}
			if got, err := run(ctx, c, peekCall("none"), peekDecode); err != nil || got != "" {
				t.Errorf("peek of nothing: %q, %v", got, err)
			}
		})
	}
}

type kvrocksError string

func (e kvrocksError) Error() string { return string(e) }
func (kvrocksError) RedisError()     {}

// Some servers (KVRocks) put ERR before the script's code.
func TestWrapAfterErr(t *testing.T) {
	err := echoInfo.wrap(kvrocksError("ERR BADARG limit is 0"))
	var se *ScriptError
	if !errors.As(err, &se) || se.Code != "BADARG" || se.Message != "limit is 0" {
		t.Errorf("got %#v", err)
	}
}

// A Batch sends its calls in one pipeline and again as EVAL after NOSCRIPT;
// a call with an ArgError is never sent and reports it; a Pending read
// before Exec says so; a pipeline that cannot be sent fails every call.
func TestBatch(t *testing.T) {
	ctx := context.Background()
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			c.Set(ctx, "p", "v", 0)
			for round := 0; round < 2; round++ {
				if err := c.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				b := NewBatch()
				e1 := queue(b, echoCall("a"), echoDecode)
				if _, err := e1.Result(); !errors.Is(err, errNotExecuted) {
					t.Errorf("before Exec: %v", err)
				}
				bad := echoCall("b")
				bad.err = &ArgError{Script: "echo.lua", Arg: "a", Value: "b", Reason: "is wrong"}
				e2 := queue(b, bad, echoDecode)
				p := queue(b, peekCall("p"), peekDecode)
				f := queue(b, echoCall("fail", "BADARG no"), echoDecode)
				err := b.Exec(ctx, c)
				if err != bad.err {
					t.Errorf("Exec: %v, want the first call's error", err)
				}
				if got, err := e1.Result(); err != nil || !cmp.Equal(got, []string{"a"}) {
					t.Errorf("echo: %q, %v", got, err)
				}
				if _, err := e2.Result(); err != bad.err {
					t.Errorf("ArgError call: %v", err)
				}
				if got, err := p.Result(); err != nil || got != "v" {
					t.Errorf("peek: %q, %v", got, err)
				}
				if _, err := f.Result(); !errors.Is(err, ErrBadArg) {
					t.Errorf("fail: %v", err)
				}
			}

			closed := redis.NewClient(&redis.Options{Addr: c.Options().Addr})
			closed.Close()
			b := NewBatch()
			pe := queue(b, echoCall("a"), echoDecode)
			if err := b.Exec(ctx, closed); err == nil {
				t.Errorf("Exec on a closed client: no error")
			}
			if _, err := pe.Result(); err == nil || errors.Is(err, errNotExecuted) {
				t.Errorf("Pending of an unsent call: %v", err)
			}
		})
	}
}

// LoadAll puts every script in the cache, so EVALSHA finds it.
func TestLoadAll(t *testing.T) {
	ctx := context.Background()
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			c.ScriptFlush(ctx)
			if err := LoadAll(ctx, c); err != nil {
				t.Fatal(err)
			}
			for _, s := range allScripts {
				ok, err := c.ScriptExists(ctx, s.script.Hash()).Result()
				if err != nil || !ok[0] {
					t.Errorf("%s not loaded: %v %v", s.file, ok, err)
				}
			}
		})
	}
}
