package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// A scripter is the demo's Redis client as the limiters of one panel see
// it: it counts the script commands they send (round trips, each EVALSHA
// and each EVAL after a NOSCRIPT), and, while down is set, fails each one
// at once with the error of a connection refused, as a dead server would,
// without sending it. It has only the methods of redis.Scripter (and
// Del), so no limiter can reach around it (with a pipeline, say).
type scripter struct {
	c     *redis.Client
	calls atomic.Int64
	down  atomic.Bool
}

// errDown is what a call meets while the panel's Redis is switched off.
var errDown = errors.New("dial tcp: connect: connection refused (the demo's Redis down switch)")

func (s *scripter) pass(cmd redis.Cmder) bool {
	s.calls.Add(1)
	if s.down.Load() {
		cmd.SetErr(errDown)
		return false
	}
	return true
}

func (s *scripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if c := redis.NewCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.Eval(ctx, script, keys, args...)
}

func (s *scripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if c := redis.NewCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.EvalSha(ctx, sha1, keys, args...)
}

func (s *scripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if c := redis.NewCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.EvalRO(ctx, script, keys, args...)
}

func (s *scripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if c := redis.NewCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.EvalShaRO(ctx, sha1, keys, args...)
}

func (s *scripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	if c := redis.NewBoolSliceCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.ScriptExists(ctx, hashes...)
}

func (s *scripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	if c := redis.NewStringCmd(ctx); !s.pass(c) {
		return c
	}
	return s.c.ScriptLoad(ctx, script)
}

// Del is for Limiter.Reset; it is not counted, and the switch does not
// stop it (Reset is the panel's own housekeeping).
func (s *scripter) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return s.c.Del(ctx, keys...)
}

var _ redis.Scripter = (*scripter)(nil)
