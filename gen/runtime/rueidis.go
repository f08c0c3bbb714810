//go:build ignore

// This file is the runtime of bindings over github.com/redis/rueidis
// (luagen -client rueidis) in place of goredis.go and batch.go; valkey-go's
// (-client valkey) is this file with rueidis's names replaced by
// valkey-go's. It needs rueidis, which the main module does not require,
// so it builds where luagen writes it (the bundle's clients/rueidis/bindings
// and clients/valkey/bindings, with their tests), never here.

package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// LoadAll loads every script of the package with SCRIPT LOAD on every node
// of c. Calls work without it, since they fall back to EVAL, but loading
// first saves one round trip per script.
func LoadAll(ctx context.Context, c rueidis.Client) error {
	for _, s := range allScripts {
		for _, n := range c.Nodes() {
			if err := n.Do(ctx, n.B().ScriptLoad().Script(s.source).Build()).Error(); err != nil {
				return fmt.Errorf("%s: %w", s.file, err)
			}
		}
	}
	return nil
}

type scriptMeta struct {
	file     string
	source   string
	hash     string // the SHA1 of source, what EVALSHA takes
	readOnly bool   // @flags no-writes: sent as EVALSHA_RO / EVAL_RO
}

// wrap turns an error reply that starts with an @error code into a
// *ScriptError and prefixes any other error with the script's name.
func (s *scriptMeta) wrap(err error) error {
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		// rueidis drops a leading ERR from Error(); some servers (KVRocks)
		// put ERR before the script's own code.
		code, msg, _ := strings.Cut(strings.TrimPrefix(rerr.Error(), "ERR "), " ")
		if _, ok := errorCodes[code]; ok {
			return &ScriptError{Script: s.file, Code: code, Message: msg}
		}
	}
	return fmt.Errorf("%s: %w", s.file, err)
}

// call is one encoded script call; err is set when the parameters could not
// be encoded, and then the call is never sent.
type call struct {
	s      *scriptMeta
	keys   []string
	args   []string
	err    error
	finish func(rueidis.RedisResult) error // set by queue
}

func newEncoder(s *scriptMeta, keys []string) encoder {
	return encoder{&call{s: s, keys: keys}}
}

func (cl *call) addInt(n int64) { cl.args = append(cl.args, strconv.FormatInt(n, 10)) }

func (cl *call) addString(s string) { cl.args = append(cl.args, s) }

// addWord appends one of enum's words.
func (cl *call) addWord(w any) { cl.args = append(cl.args, w.(string)) }

// command builds name (EVALSHA, EVAL, or their _RO forms) with body (the
// hash or the script). Only the first key routes it: rueidis's builder
// panics on keys of several slots in a cluster, where the server's
// CROSSSLOT is the answer a caller expects.
func (cl *call) command(c rueidis.Client, name, body string) rueidis.Completed {
	b := c.B().Arbitrary(name).Args(body, strconv.Itoa(len(cl.keys)))
	if len(cl.keys) > 0 {
		b = b.Keys(cl.keys[0]).Args(cl.keys[1:]...)
	}
	b = b.Args(cl.args...)
	if strings.HasSuffix(name, "_RO") {
		return b.ReadOnly()
	}
	return b.Build()
}

func run[T any](ctx context.Context, c rueidis.Client, cl *call, decode func(any) (T, error)) (T, error) {
	var zero T
	if cl.err != nil {
		return zero, cl.err
	}
	return result(cl, runOnce(ctx, c, cl), decode)
}

// runOnce sends a call: EVALSHA, then EVAL when the server lacks the
// script. A no-writes script goes as EVALSHA_RO/EVAL_RO, which rueidis may
// send to a replica; a server without the _RO commands gets EVALSHA/EVAL.
func runOnce(ctx context.Context, c rueidis.Client, cl *call) rueidis.RedisResult {
	if cl.s.readOnly {
		res := c.Do(ctx, cl.command(c, "EVALSHA_RO", cl.s.hash))
		if noScript(res) {
			res = c.Do(ctx, cl.command(c, "EVAL_RO", cl.s.source))
		}
		if !unknownCommand(res) {
			return res
		}
	}
	res := c.Do(ctx, cl.command(c, "EVALSHA", cl.s.hash))
	if noScript(res) {
		res = c.Do(ctx, cl.command(c, "EVAL", cl.s.source))
	}
	return res
}

// noScript reports a NOSCRIPT reply: the call did not run.
func noScript(res rueidis.RedisResult) bool {
	err, ok := rueidis.IsRedisErr(res.Error())
	return ok && err.IsNoScript()
}

// unknownCommand reports a server without EVALSHA_RO/EVAL_RO.
func unknownCommand(res rueidis.RedisResult) bool {
	err, ok := rueidis.IsRedisErr(res.Error())
	return ok && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

func result[T any](cl *call, res rueidis.RedisResult, decode func(any) (T, error)) (T, error) {
	var zero T
	if err := res.NonRedisError(); err != nil {
		return zero, cl.s.wrap(err)
	}
	msg, _ := res.ToMessage()
	v, err := value(&msg)
	if err != nil {
		return zero, cl.s.wrap(err)
	}
	return decode(v)
}

// value reads a reply as the decoders take it, as go-redis's reader gives
// it: int64, string, nil, []any, a RESP3 float64 or bool; an error reply
// is returned at the top and kept as an element inside an array (the
// decoder then refuses it).
func value(m *rueidis.RedisMessage) (any, error) {
	switch {
	case m.IsNil():
		return nil, nil
	case m.Error() != nil:
		return nil, m.Error()
	case m.IsInt64():
		return m.AsInt64()
	case m.IsString():
		return m.ToString()
	case m.IsFloat64():
		return m.ToFloat64()
	case m.IsBool():
		return m.ToBool()
	case m.IsArray():
		elems, err := m.ToArray()
		if err != nil {
			return nil, err
		}
		out := make([]any, len(elems))
		for i := range elems {
			v, err := value(&elems[i])
			if err != nil {
				v = err
			}
			out[i] = v
		}
		return out, nil
	}
	return m.ToAny()
}

// Batch queues script calls and sends them in one DoMulti, which rueidis
// splits by node in a cluster. Calls answered NOSCRIPT did not run, so Exec
// sends them again as EVAL (EVAL_RO for no-writes scripts; EVAL where the
// server has no _RO commands). A Batch is not safe for concurrent use.
type Batch struct {
	calls []*call
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Exec sends the queued calls and fills their Pending results, then empties
// b. It returns the first error of any call; each Pending reports its own.
func (b *Batch) Exec(ctx context.Context, c rueidis.Client) error {
	calls := b.calls
	b.calls = nil
	res := make([]rueidis.RedisResult, len(calls))
	send := func(pick func(i int, cl *call) (name, body string, ok bool)) {
		var cmds rueidis.Commands
		var at []int
		for i, cl := range calls {
			if name, body, ok := pick(i, cl); ok && cl.err == nil {
				cmds = append(cmds, cl.command(c, name, body))
				at = append(at, i)
			}
		}
		if len(cmds) == 0 {
			return
		}
		for j, r := range c.DoMulti(ctx, cmds...) {
			res[at[j]] = r
		}
	}
	send(func(_ int, cl *call) (string, string, bool) {
		if cl.s.readOnly {
			return "EVALSHA_RO", cl.s.hash, true
		}
		return "EVALSHA", cl.s.hash, true
	})
	// A NOSCRIPT call did not run, nor did a _RO call the server does not
	// know: both are sent again, as EVAL_RO or EVAL.
	send(func(i int, cl *call) (string, string, bool) {
		switch {
		case cl.s.readOnly && unknownCommand(res[i]):
			return "EVAL", cl.s.source, true
		case cl.s.readOnly && noScript(res[i]):
			return "EVAL_RO", cl.s.source, true
		case noScript(res[i]):
			return "EVAL", cl.s.source, true
		}
		return "", "", false
	})
	var first error
	for i, cl := range calls {
		if err := cl.finish(res[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Pending is the result of a call queued in a Batch.
type Pending[T any] struct {
	res T
	err error
}

// Result returns the call's result; it is ready once Batch.Exec returns.
func (p *Pending[T]) Result() (T, error) { return p.res, p.err }

var errNotExecuted = errors.New("luagen: Result called before Batch.Exec")

func queue[T any](b *Batch, cl *call, decode func(any) (T, error)) *Pending[T] {
	p := &Pending[T]{err: errNotExecuted}
	cl.finish = func(res rueidis.RedisResult) error {
		if cl.err != nil {
			p.err = cl.err
		} else {
			p.res, p.err = result(cl, res, decode)
		}
		return p.err
	}
	b.calls = append(b.calls, cl)
	return p
}
