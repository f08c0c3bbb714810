package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrPipeline is returned by a call made on a redis.Pipeliner (Pipeline,
// TxPipeline): a queued command has no reply until Exec, so the call could
// neither decode its result nor fall back to EVAL. Nothing is queued; use a
// Batch, which sends its calls in one pipeline and decodes them after Exec.
var ErrPipeline = errors.New("luagen: a call on a redis.Pipeliner has no reply until Exec; queue it in a Batch instead")

// LoadAll loads every script of the package with SCRIPT LOAD. Calls work
// without it, since they fall back to EVAL, but loading first saves one
// round trip per script. A *redis.ClusterClient loads on every master; a
// *redis.Ring does not, so load through each shard's client there.
func LoadAll(ctx context.Context, c redis.Scripter) error {
	for _, s := range allScripts {
		if err := s.script.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
	}
	return nil
}

type scriptMeta struct {
	file     string
	script   *redis.Script
	readOnly bool // @flags no-writes: sent as EVALSHA_RO / EVAL_RO
	hash     any  // script.Hash(), boxed once for every call's command
}

func init() {
	for _, s := range allScripts {
		s.hash = s.script.Hash()
	}
}

// wrap turns an error reply that starts with an @error code into a
// *ScriptError and prefixes any other error with the script's name.
func (s *scriptMeta) wrap(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// Some servers (KVRocks) put ERR before the script's own code.
		code, msg, _ := strings.Cut(strings.TrimPrefix(rerr.Error(), "ERR "), " ")
		if _, ok := errorCodes[code]; ok {
			return &ScriptError{Script: s.file, Code: code, Message: msg}
		}
	}
	return fmt.Errorf("%s: %w", s.file, err)
}

// unknownCommand reports a server without EVALSHA_RO/EVAL_RO (Redis before
// 7.0, or one where they are renamed away).
func unknownCommand(err error) bool {
	if err == nil { // the common case, without errors.As's allocation
		return false
	}
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(strings.ToLower(rerr.Error()), "unknown command")
}

// noScript reports a NOSCRIPT reply: the server does not have the script
// cached, and the call did not run.
func noScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// call is one encoded script call; err is set when the parameters could not
// be encoded, and then the call is never sent. keys and args live in keyBuf
// and argBuf when they fit, so that a call is one allocation; args start
// after room for the command's name, the hash and the keys, so that a
// single call sends argBuf itself as its command (see evalSha).
type call struct {
	s      *scriptMeta
	keys   []string
	args   []any
	err    error
	finish func(*redis.Cmd) error // set by queue
	keyBuf [1]string
	argBuf [12]any // a call of 288 bytes, a size class of Go's allocator: a key and 8 arguments fit (token_bucket.lua has 7)
}

// newEncoder starts a call with a copy of keys (so a literal slice of keys
// need not outlive the call to newEncoder), and its arguments in argBuf
// after room for the command's name, the hash and the keys.
func newEncoder(s *scriptMeta, keys []string) encoder {
	cl := &call{s: s}
	cl.keys = append(cl.keyBuf[:0:len(cl.keyBuf)], keys...)
	if from := 3 + len(keys); from <= len(cl.argBuf) {
		cl.args = cl.argBuf[from:from]
	}
	return encoder{cl}
}

// addInt appends an integer as int64, which go-redis writes in decimal
// without building a string.
func (cl *call) addInt(n int64) { cl.args = append(cl.args, n) }

func (cl *call) addString(s string) { cl.args = append(cl.args, s) }

// addWord appends a string already boxed (enum's words).
func (cl *call) addWord(w any) { cl.args = append(cl.args, w) }

// router is a client that sends the package's calls its own way: the
// FunctionsClient of luagen_functions.go, when the package has a Functions
// library, which sends FCALL.
type router interface {
	runCall(ctx context.Context, cl *call) *redis.Cmd
	execCalls(ctx context.Context, calls []*call) error
	client() redis.Scripter
}

// isPipeline reports a redis.Pipeliner: commands queued on it have no reply
// until its Exec.
func isPipeline(c redis.Scripter) bool {
	if r, ok := c.(router); ok {
		c = r.client()
	}
	_, ok := c.(interface {
		Exec(context.Context) ([]redis.Cmder, error)
	})
	return ok
}

func run[T any](ctx context.Context, c redis.Scripter, cl *call, decode func(any) (T, error)) (T, error) {
	var zero T
	if cl.err != nil {
		return zero, cl.err
	}
	if isPipeline(c) {
		return zero, fmt.Errorf("%s: %w", cl.s.file, ErrPipeline)
	}
	return result(cl, runOnce(ctx, c, cl), decode)
}

// runOnce sends a call: EVALSHA, then EVAL when the server lacks the
// script (what redis.Script.Run does). A no-writes script goes as
// EVALSHA_RO/EVAL_RO, so Redis enforces that it writes nothing and a
// cluster may serve it from a replica; a server without the _RO commands
// gets EVALSHA/EVAL instead.
func runOnce(ctx context.Context, c redis.Scripter, cl *call) *redis.Cmd {
	if r, ok := c.(router); ok {
		return r.runCall(ctx, cl)
	}
	if cl.s.readOnly {
		cmd := evalSha(ctx, c, cl, "evalsha_ro")
		if noScript(cmd.Err()) {
			cmd = cl.s.script.EvalRO(ctx, c, cl.keys, cl.args...)
		}
		if !unknownCommand(cmd.Err()) {
			return cmd
		}
	}
	cmd := evalSha(ctx, c, cl, "evalsha")
	if noScript(cmd.Err()) {
		cmd = cl.s.script.Eval(ctx, c, cl.keys, cl.args...)
	}
	return cmd
}

// processor is what every go-redis client has besides redis.Scripter.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// evalSha sends EVALSHA or EVALSHA_RO (name) for cl. On a client with
// Process, every go-redis client, the command is cl.argBuf itself, where
// go-redis's Scripter methods would copy the hash, the keys and the
// arguments into a new slice: a decision is the cheaper by two allocations.
//
// name is an any holding a constant, which costs no allocation.
func evalSha(ctx context.Context, c redis.Scripter, cl *call, name any) *redis.Cmd {
	n := 3 + len(cl.keys) + len(cl.args)
	p, ok := c.(processor)
	if !ok || n > len(cl.argBuf) { // the arguments did not fit argBuf
		if name == "evalsha_ro" {
			return cl.s.script.EvalShaRO(ctx, c, cl.keys, cl.args...)
		}
		return cl.s.script.EvalSha(ctx, c, cl.keys, cl.args...)
	}
	argv := cl.argBuf[:n]
	argv[0], argv[1], argv[2] = name, cl.s.hash, len(cl.keys)
	for i, k := range cl.keys {
		argv[3+i] = k
	}
	cmd := redis.NewCmd(ctx, argv...)
	if len(cl.keys) > 0 {
		cmd.SetFirstKeyPos(3) // as go-redis's EvalSha does, for routing
	}
	_ = p.Process(ctx, cmd)
	return cmd
}

func result[T any](cl *call, cmd *redis.Cmd, decode func(any) (T, error)) (T, error) {
	v, err := cmd.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		var zero T
		return zero, cl.s.wrap(err)
	}
	return decode(v)
}
