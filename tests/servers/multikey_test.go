package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/tests/scenario"
)

// TestMultiKeyErrorElements: one call of gcra.lua's multi-key form with a
// good call, a key of another type, another script's state, a bad cost
// and a good call again. On every server each error comes back as that
// call's element, a redis.Error with the text the script answers a call
// of its own (the same bytes: the bundled scripts answer every error with
// redis.error_reply, WRONGTYPE too, after a redis.pcall), and the calls
// around them run: the last one finds the first's write.
func TestMultiKeyErrorElements(t *testing.T) {
	servers := []struct {
		name string
		open func(t *testing.T) redis.Cmdable
	}{
		{"miniredis", func(t *testing.T) redis.Cmdable {
			m := miniredis.RunT(t)
			m.SetTime(time.UnixMicro(scenario.T0))
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
		{"redis-resp2", func(t *testing.T) redis.Cmdable { return standalone(t, 2) }},
		{"redis-resp3", func(t *testing.T) redis.Cmdable { return standalone(t, 3) }},
		{"cluster", func(t *testing.T) redis.Cmdable { return cluster(t) }},
	}
	form := bindings.MultiKeyForm(bindings.GCRAScript.Hash())
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			ctx := context.Background()
			c := srv.open(t)
			p := fmt.Sprintf("mkerr%d:{%s}", time.Now().UnixNano(), srv.name)
			good, wrong, foreign := p+"good", p+"wrong", p+"foreign"
			if err := c.HSet(ctx, wrong, "name", "alice").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(ctx, foreign, scenario.TokenBucketState(scenario.T0, 3), 0).Err(); err != nil {
				t.Fatal(err)
			}
			take := func(cost string) []string { return []string{"2", "1", "60000", "0", "all", cost, "0"} }
			calls := []struct {
				key  string
				argv []string
			}{{good, take("1")}, {wrong, take("1")}, {foreign, take("1")}, {good, take("x")}, {good, take("1")}}
			var keys []string
			var args []any
			for _, cl := range calls {
				keys = append(keys, cl.key)
				args = append(args, "1", strconv.Itoa(len(cl.argv)))
				for _, a := range cl.argv {
					args = append(args, a)
				}
			}
			reply, err := form.Run(ctx, c, keys, args...).Result()
			if err != nil {
				t.Fatal(err)
			}
			els, ok := reply.([]any)
			if !ok || len(els) != len(calls) {
				t.Fatalf("got %#v, want %d elements", reply, len(calls))
			}
			// The good calls: the first of a burst of 2, then the second.
			for i, want := range map[int]int64{0: 1, 4: 1} {
				if r, ok := els[i].([]any); !ok || len(r) != 4 || r[0] != want || r[1] != int64(0) && i == 4 {
					t.Errorf("element %d = %#v, want allowed, the %s of a burst of 2", i, els[i], map[int]string{0: "first", 4: "second"}[i])
				}
			}
			wantText := map[int]string{}
			for i := 1; i <= 3; i++ {
				// What the script answers the same call of its own (no
				// write happens: the key stays as it is).
				args := make([]any, len(calls[i].argv))
				for j, a := range calls[i].argv {
					args[j] = a
				}
				_, own := bindings.GCRAScript.Run(ctx, c, []string{calls[i].key}, args...).Result()
				if own == nil {
					t.Fatalf("call %d of its own: no error", i)
				}
				wantText[i] = own.Error()
			}
			for i := 1; i <= 3; i++ {
				var re redis.Error
				e, ok := els[i].(error)
				if !ok || !errors.As(e, &re) || e.Error() != wantText[i] {
					t.Errorf("element %d = %#v, want the redis.Error %q", i, els[i], wantText[i])
				}
				t.Logf("element %d: %T %q", i, els[i], els[i])
			}
			for i, code := range []string{"", "WRONGTYPE", "BADSTATE", "BADARG"} {
				if i > 0 && !strings.HasPrefix(wantText[i], code+" ") {
					t.Errorf("call %d of its own answered %q, want %s", i, wantText[i], code)
				}
			}
		})
	}
}

// TestMultiKeyRaisedErrors runs luagen's driver (the manifest's
// multi_form) around a stranger's script that raises errors the bundled
// scripts never raise: a redis.call on a key of another type, a Lua
// runtime error and error() with an error table. Each is that call's
// element, the calls after it run, and the elements read as the same
// error on every server: Redis's WRONGTYPE text (without the script's name
// and line a call of its own adds after it), the runtime error without its
// "user_script:1: " (Redis) or "<string>:1: " (miniredis) position (and
// without a code: its first word is Lua's), the table as raised.
func TestMultiKeyRaisedErrors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "bindings", "scripts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MultiForm struct{ Before, After string } `json:"multi_form"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.MultiForm.After == "" {
		t.Fatalf("bindings/scripts.json: no multi_form (%v)", err)
	}
	stranger := "if ARGV[1] == 'runtime' then local x = KEYS[2] return x + 1 end\n" +
		"if ARGV[1] == 'table' then error({err = 'CUSTOM a table raised'}) end\n" +
		"return redis.call(ARGV[1], KEYS[1])"
	form := redis.NewScript(m.MultiForm.Before + stranger + m.MultiForm.After)
	servers := []struct {
		name string
		open func(t *testing.T) redis.Cmdable
	}{
		{"miniredis", func(t *testing.T) redis.Cmdable {
			c := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
		{"redis-resp2", func(t *testing.T) redis.Cmdable { return standalone(t, 2) }},
		{"redis-resp3", func(t *testing.T) redis.Cmdable { return standalone(t, 3) }},
		{"cluster", func(t *testing.T) redis.Cmdable { return cluster(t) }},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			ctx := context.Background()
			c := srv.open(t)
			p := fmt.Sprintf("mkraise%d:{%s}", time.Now().UnixNano(), srv.name)
			if err := c.HSet(ctx, p+"h", "name", "alice").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(ctx, p+"s", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			keys := []string{p + "h", p + "s", p + "s", p + "s"}
			args := []any{"1", "1", "GET", "1", "1", "runtime", "1", "1", "table", "1", "1", "GET"}
			reply, err := form.Run(ctx, c, keys, args...).Result()
			if err != nil {
				t.Fatal(err)
			}
			els, ok := reply.([]any)
			if !ok || len(els) != 4 {
				t.Fatalf("got %#v, want 4 elements", reply)
			}
			// The runtime error's words are each Lua's own (gopher-lua: "cannot
			// perform add operation between nil and number"; Redis: "attempt
			// to perform arithmetic on local 'x' (a nil value)"): what both
			// hold is "nil", and no position.
			for i, want := range []string{"WRONGTYPE Operation against a key holding the wrong kind of value", "nil", "CUSTOM a table raised"} {
				var re redis.Error
				e, ok := els[i].(error)
				if !ok || !errors.As(e, &re) || !strings.Contains(e.Error(), want) || strings.Contains(e.Error(), ":1: ") || (i != 1 && e.Error() != want) {
					t.Errorf("element %d = %#v, want a redis.Error %q", i, els[i], want)
				}
				t.Logf("element %d: %q", i, els[i])
			}
			if els[3] != "v" {
				t.Errorf("element 3 = %#v, want \"v\": the call after the errors runs", els[3])
			}
		})
	}
}

// TestItselfRaisedErrorWritesNothing holds the scripts that take the
// multi-key form's layout themselves to their header's word on an error
// Redis raises mid-call: it is the whole call's, and nothing was written,
// since Redis raises it at a script's first write. Under maxmemory with
// noeviction on a server of its own, a call of two keys answers OOM and
// writes neither key; the same call once memory is free writes both (the
// control that shows the test sees writes).
func TestItselfRaisedErrorWritesNothing(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redisserver.Start(t)})
	t.Cleanup(func() { c.Close() })
	args := map[*redis.Script][]string{
		bindings.FixedWindowScript:          {"10", "1000", "1", "0", "0"},
		bindings.SlidingWindowCounterScript: {"10", "1000", "1", "0", "0"},
		bindings.SlidingWindowLogScript:     {"10", "1000", "1", "0", "0"},
		bindings.LeakyBucketScript:          {"10", "10", "1000", "1", "0", "0"},
	}
	for s, one := range args {
		if bindings.MultiKeyItself(s.Hash()) != s {
			t.Fatalf("%s does not take the form's layout itself", s.Hash())
		}
		if err := s.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
		keys := []string{"oom:a:" + s.Hash(), "oom:b:" + s.Hash()}
		var argv []any
		for range keys {
			argv = append(argv, "1", strconv.Itoa(len(one)))
			for _, a := range one {
				argv = append(argv, a)
			}
		}
		for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
			if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.EvalSha(ctx, c, keys, argv...).Result()
		if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
			t.Fatal(err)
		}
		if err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Errorf("%s under maxmemory: got %v, want the whole call's OOM error", s.Hash(), err)
		}
		if n := c.Exists(ctx, keys...).Val(); n != 0 {
			t.Errorf("%s under maxmemory: %d of its keys written", s.Hash(), n)
		}
		if err := s.EvalSha(ctx, c, keys, argv...).Err(); err != nil {
			t.Fatal(err)
		}
		if n := c.Exists(ctx, keys...).Val(); n != 2 {
			t.Errorf("%s with memory free: %d of 2 keys written", s.Hash(), n)
		}
	}
}
