package runtime

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// PipelineClient is what Batch.Exec needs: *redis.Client,
// *redis.ClusterClient, *redis.Ring, *redis.Tx and redis.UniversalClient
// have it.
type PipelineClient interface {
	Pipeline() redis.Pipeliner
}

// Batch queues script calls and sends them in one pipeline. Unlike
// redis.Script.Run inside a pipeline, it survives SCRIPT FLUSH, restarts and
// failovers: calls answered NOSCRIPT did not run, so Exec sends them again
// as EVAL (EVAL_RO for no-writes scripts; EVAL where the server has no _RO
// commands). A Batch is not safe for concurrent use.
type Batch struct {
	calls []*call
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

// Exec sends the queued calls and fills their Pending results, then empties
// b. Like go-redis's Pipeliner.Exec, it returns the first error of any
// call; each Pending reports its own.
func (b *Batch) Exec(ctx context.Context, c PipelineClient) error {
	calls := b.calls
	b.calls = nil
	if r, ok := c.(router); ok {
		return r.execCalls(ctx, calls)
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := c.Pipeline()
	for i, cl := range calls {
		switch {
		case cl.err != nil:
		case cl.s.readOnly:
			cmds[i] = cl.s.script.EvalShaRO(ctx, pipe, cl.keys, cl.args...)
		default:
			cmds[i] = cl.s.script.EvalSha(ctx, pipe, cl.keys, cl.args...)
		}
	}
	// Errors are per command; they are read from cmds below, except when
	// go-redis could not send the pipeline at all (no connection, a context
	// that ended while waiting for one): then it returns the error from Exec
	// but sets it on no command.
	if _, err := pipe.Exec(ctx); err != nil {
		unsent(cmds, err)
	}

	// A NOSCRIPT call did not run, nor did a _RO call the server does not
	// know: both are sent again, as EVAL_RO or EVAL.
	retry := c.Pipeline()
	for i, cl := range calls {
		if cmds[i] == nil {
			continue
		}
		err := cmds[i].Err()
		switch {
		case cl.s.readOnly && unknownCommand(err):
			cmds[i] = cl.s.script.Eval(ctx, retry, cl.keys, cl.args...)
		case cl.s.readOnly && noScript(err):
			cmds[i] = cl.s.script.EvalRO(ctx, retry, cl.keys, cl.args...)
		case noScript(err):
			cmds[i] = cl.s.script.Eval(ctx, retry, cl.keys, cl.args...)
		}
	}
	if retry.Len() > 0 {
		if _, err := retry.Exec(ctx); err != nil {
			unsent(cmds, err)
		}
	}
	return finishAll(calls, cmds)
}

// finishAll fills every call's Pending from its command (nil for a call
// that was never sent) and returns the first error.
func finishAll(calls []*call, cmds []*redis.Cmd) error {
	var first error
	for i, cl := range calls {
		if err := cl.finish(cmds[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// unsent gives err to the commands of a pipeline that have neither a reply
// nor an error: go-redis could not send them. (A reply of nil comes with
// redis.Nil, so a command with neither was never answered.)
func unsent(cmds []*redis.Cmd, err error) {
	for _, cmd := range cmds {
		if cmd != nil && cmd.Err() == nil && cmd.Val() == nil {
			cmd.SetErr(err)
		}
	}
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
	cl.finish = func(cmd *redis.Cmd) error {
		if cl.err != nil {
			p.err = cl.err
		} else {
			p.res, p.err = result(cl, cmd, decode)
		}
		return p.err
	}
	b.calls = append(b.calls, cl)
	return p
}
