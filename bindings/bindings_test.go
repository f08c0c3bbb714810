package bindings

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func newServer(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	// The scripts take a caller clock only within 60 s of the server's
	// TIME; the tests' clocks are near this instant.
	m.SetTime(time.Unix(1_700_000_000, 0))
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	return m, c
}

// The hash EVALSHA sends must be the SHA1 of the file other stacks copy, and
// the one Redis computes, or every call would miss the script cache.
func TestSourcesMatchFiles(t *testing.T) {
	files, err := filepath.Glob("../lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in ../lua: %v", err)
	}
	byFile := map[string]*scriptMeta{}
	for _, s := range allScripts {
		byFile[s.file] = s
	}
	_, c := newServer(t)
	ctx := context.Background()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha1.Sum(src)
		want := hex.EncodeToString(sum[:])
		s, ok := byFile[filepath.Base(f)]
		if !ok {
			t.Errorf("%s has no generated binding; run go generate ./bindings", f)
			continue
		}
		if got := s.script.Hash(); got != want {
			t.Errorf("%s: generated hash %s, file SHA1 %s; run go generate ./bindings", f, got, want)
		}
		loaded, err := c.ScriptLoad(ctx, string(src)).Result()
		if err != nil {
			t.Errorf("%s: SCRIPT LOAD: %v", f, err)
		} else if loaded != want {
			t.Errorf("%s: SCRIPT LOAD replied %s, want %s", f, loaded, want)
		}
	}
	if len(allScripts) != len(files) {
		t.Errorf("%d generated scripts for %d files in ../lua", len(allScripts), len(files))
	}
}

// bucketParams is a call of leaky_bucket.lua, the runtime's test subject: a
// script of one request, whose reply has a bool.
func bucketParams(cost int64, now time.Time) LeakyBucketParams {
	return LeakyBucketParams{Capacity: 2, Rate: 1, Period: time.Second, Cost: cost, Now: now}
}

func TestLeakyBucket(t *testing.T) {
	_, c := newServer(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	var got []LeakyBucketResult
	for i := 0; i < 3; i++ {
		r, err := LeakyBucket(ctx, c, "lb:smoke", bucketParams(1, now))
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		got = append(got, r)
	}
	want := []LeakyBucketResult{
		{Allowed: true, Remaining: 1, ResetAfter: time.Second},
		{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second},
		{Allowed: false, Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestBadArg(t *testing.T) {
	_, c := newServer(t)
	// Within every bound the header declares, so Go sends it, but a bucket
	// that takes 1e11 s to fill is past the script's own bound on the
	// time to fill (1e15 µs).
	p := bucketParams(1, time.Time{})
	p.Capacity, p.Rate, p.Period = 1e9, 1, 1e11*time.Millisecond
	_, err := LeakyBucket(context.Background(), c, "lb:bad", p)
	if !errors.Is(err, ErrBadArg) {
		t.Fatalf("err = %v, want one matching ErrBadArg", err)
	}
	var se *ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T, want *ScriptError", err)
	}
	if se.Script != "leaky_bucket.lua" || se.Code != "BADARG" || se.Message == "" {
		t.Errorf("ScriptError = %+v", se)
	}
}

// A duration that is not a whole number of the wire unit is refused before
// anything reaches Redis.
func TestArgErrorSendsNothing(t *testing.T) {
	m, c := newServer(t)
	p := bucketParams(1, time.Time{})
	p.Period = 1500 * time.Microsecond
	before := m.CommandCount()
	_, err := LeakyBucket(context.Background(), c, "lb:arg", p)
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *ArgError", err)
	}
	want := &ArgError{Script: "leaky_bucket.lua", Arg: "period", Value: "1.5ms", Reason: "is not a whole number of milliseconds"}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("ArgError (-want +got):\n%s", diff)
	}
	if n := m.CommandCount() - before; n != 0 {
		t.Errorf("%d commands sent, want 0", n)
	}
}

// Script.Run inside a go-redis pipeline does not fall back to EVAL, so the
// batch path must: after SCRIPT FLUSH every call still runs, exactly once.
func TestBatchAfterScriptFlush(t *testing.T) {
	m, c := newServer(t)
	ctx := context.Background()
	if err := LoadAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	bad := bucketParams(1, now)
	bad.Capacity, bad.Rate, bad.Period = 1e9, 1, 1e11*time.Millisecond // see TestBadArg

	b := NewBatch()
	first := b.LeakyBucket("lb:batch", bucketParams(1, now))
	second := b.LeakyBucket("lb:batch", bucketParams(1, now))
	badArg := b.LeakyBucket("lb:other", bad)
	unsendable := bucketParams(1, now)
	unsendable.Now = time.UnixMicro(1 << 53) // past now's bound of 2^52 µs
	encode := b.LeakyBucket("lb:other", unsendable)
	third := b.LeakyBucket("lb:batch", bucketParams(1, now))
	if _, err := first.Result(); err == nil {
		t.Error("Result before Exec returned no error")
	}
	err := b.Exec(ctx, c)
	if !errors.Is(err, ErrBadArg) {
		t.Errorf("Exec = %v, want the first call error (BADARG)", err)
	}

	var got []LeakyBucketResult
	for i, p := range []*Pending[LeakyBucketResult]{first, second, third} {
		r, err := p.Result()
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		got = append(got, r)
	}
	want := []LeakyBucketResult{
		{Allowed: true, Remaining: 1, ResetAfter: time.Second},
		{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second},
		{Allowed: false, Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if _, err := badArg.Result(); !errors.Is(err, ErrBadArg) {
		t.Errorf("bad call: err = %v, want ErrBadArg", err)
	}
	var ae *ArgError
	if _, err := encode.Result(); !errors.As(err, &ae) {
		t.Errorf("unencodable call: err = %v, want *ArgError", err)
	}
	if m.Exists("lb:other") {
		t.Error("a failed call wrote tb:other")
	}
}

// The batch must route through a cluster pipeline too; miniredis answers
// CLUSTER SLOTS as a one-node cluster.
func TestBatchClusterClient(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.Unix(3600, 0)) // the clock bucketParams sends
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	b := NewBatch()
	var pending []*Pending[LeakyBucketResult]
	for _, key := range []string{"{a}lb", "{b}lb", "{a}lb"} {
		pending = append(pending, b.LeakyBucket(key, bucketParams(1, time.Unix(3600, 0))))
	}
	if err := b.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	var remaining []int64
	for _, p := range pending {
		r, err := p.Result()
		if err != nil {
			t.Fatal(err)
		}
		remaining = append(remaining, r.Remaining)
	}
	if diff := cmp.Diff([]int64{1, 1, 0}, remaining); diff != "" {
		t.Errorf("remaining (-want +got):\n%s", diff)
	}
}

func TestReplyShape(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  string
	}{
		{"not an array", int64(1), "leaky_bucket.lua: reply: want an array, got int64 1"},
		{"too short", []any{int64(1)}, "leaky_bucket.lua: reply: want 4 elements, got 1"},
		{"too long", []any{int64(1), int64(0), int64(0), int64(0), int64(0)}, "leaky_bucket.lua: reply: want 4 elements, got 5"},
		{"duration overflow", []any{int64(1), int64(0), int64(1 << 62), int64(0)}, "leaky_bucket.lua: reply element 3 (retry_after): want a number of milliseconds that fits a time.Duration, got int64 4611686018427387904"},
		{"bool not 1/0", []any{int64(2), int64(0), int64(0), int64(0)}, "leaky_bucket.lua: reply element 1 (allowed): want bool (1 or 0), got int64 2"},
		{"text for int", []any{int64(1), "x", int64(0), int64(0)}, `leaky_bucket.lua: reply element 2 (remaining): want int, got string "x"`},
		{"nil", nil, "leaky_bucket.lua: reply: want an array, got nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := leakyBucketDecode(tt.reply)
			var re *ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *ReplyError", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("err = %q, want %q", got, tt.want)
			}
		})
	}
	// An integer held in a string is still an integer: scripts often return
	// what redis.call gave them.
	got, err := leakyBucketDecode([]any{int64(1), "7", int64(0), "250"})
	want := LeakyBucketResult{Allowed: true, Remaining: 7, ResetAfter: 250 * time.Millisecond}
	if err != nil || got != want {
		t.Errorf("decode = %+v, %v; want %+v", got, err, want)
	}
}

// A batch script's reply is whole records, one per request, each field
// checked against its bounds and sentinels.
func TestBatchReplyShape(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply any
		want  string
	}{
		{"no record", []any{}, "token_bucket.lua: reply element 1 (decisions): want a count in [1..64], got 0"},
		{"a part record", []any{int64(1), int64(0), int64(0), int64(0), int64(1)}, "token_bucket.lua: reply element 1 (decisions): want whole records of 4 elements, got 5 elements"},
		{"allowed above 1e9", []any{int64(1000000001), int64(0), int64(0), int64(0)}, "token_bucket.lua: reply element 1 (allowed): want an int in [0..1000000000] or -1, got int64 1000000001"},
		{"retry below never", []any{int64(0), int64(0), int64(-2), int64(0)}, "token_bucket.lua: reply element 3 (retry_after): want an int in [0..] or -1, got int64 -2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tokenBucketDecode(tt.reply)
			var re *ReplyError
			if !errors.As(err, &re) || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	got, err := tokenBucketDecode([]any{int64(1), int64(2), int64(0), int64(300), int64(-1), int64(0), int64(0), int64(0)})
	want := TokenBucketResult{Decisions: []TokenBucketDecision{
		{Allowed: 1, Remaining: 2, ResetAfter: 300 * time.Millisecond},
		{Allowed: TokenBucketDecisionAllowedExpired},
	}}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("decode: %v (-want +got):\n%s", err, diff)
	}
}

// replyError is an error reply as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Some servers put ERR before a script's own code; it must still match.
func TestWrapErrPrefix(t *testing.T) {
	for _, reply := range []string{"BADARG cost", "ERR BADARG cost"} {
		err := leakyBucketInfo.wrap(replyError(reply))
		var se *ScriptError
		if !errors.Is(err, ErrBadArg) || !errors.As(err, &se) || se.Message != "cost" {
			t.Errorf("%q: err = %#v, want a *ScriptError matching ErrBadArg", reply, err)
		}
	}
	if err := leakyBucketInfo.wrap(replyError("ERR unknown")); errors.Is(err, ErrBadArg) || !strings.HasPrefix(err.Error(), "leaky_bucket.lua: ERR unknown") {
		t.Errorf("undeclared: err = %v", err)
	}
}

// Every call of a bundled script with a fixed argument count fits argBuf
// (the command, the hash, the key count, the keys, the arguments), so it is
// sent as argBuf itself; one that did not would cost two more allocations
// and 400 bytes a decision (leaky_bucket.lua before argBuf held 12). An
// optional record (fixed_window.lua's form, for a quota or a settle) is
// counted absent: the common call fits, and one with it (14 values) pays
// those allocations.
func TestBundledCallsFitArgBuf(t *testing.T) {
	raw, err := os.ReadFile("scripts.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Scripts []struct {
			Name string
			Keys []json.RawMessage
			Args []struct {
				Variadic bool
				Type     string
				Fields   []json.RawMessage
				MinCount *int `json:"min_count"`
			}
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	room := len(call{}.argBuf)
	for _, s := range m.Scripts {
		n := 3 + len(s.Keys)
		variadic := false
		for _, a := range s.Args {
			switch {
			case a.Variadic && a.Type == "record" && len(s.Keys) == 1 && a.MinCount != nil && *a.MinCount == 0:
				// optional: absent in the common call
			case a.Variadic && a.Type == "record" && len(s.Keys) == 1:
				n += len(a.Fields) // one request
			case a.Variadic:
				variadic = true
			default:
				n++
			}
		}
		if !variadic && n > room {
			t.Errorf("%s: a call is %d values, argBuf holds %d", s.Name, n, room)
		}
	}
	if len(m.Scripts) < 8 {
		t.Errorf("scripts.json lists %d scripts, want the bundle's 8", len(m.Scripts))
	}
}
