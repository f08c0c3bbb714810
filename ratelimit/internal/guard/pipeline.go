package guard

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipe is a redis.Pipeliner whose scripting commands (EVAL, EVALSHA, FCALL
// and their _RO forms, and Process and Do) go through the guard at Exec,
// each as a single call would: failed at once where its node's breaker is
// open, sent again on READONLY, and opening the breaker of a node that did
// not answer. Those are all a Batch of the bindings sends; any other
// command goes to the client's pipeline as it is, and is sent after them.
type pipe struct {
	redis.Pipeliner                 // the client's own
	build           redis.Pipeliner // builds commands as go-redis does
	newPipe         func() redis.Pipeliner
	g               *guard
	cmds            []redis.Cmder
}

func (g *guard) pipeline(newPipe func() redis.Pipeliner) redis.Pipeliner {
	return &pipe{Pipeliner: newPipe(), build: newPipe(), newPipe: newPipe, g: g}
}

// queue takes the command build queued.
func (p *pipe) queue(cmd *redis.Cmd) *redis.Cmd {
	p.build.Discard()
	p.cmds = append(p.cmds, cmd)
	return cmd
}

func (p *pipe) Process(ctx context.Context, cmd redis.Cmder) error {
	p.cmds = append(p.cmds, cmd)
	return nil
}

func (p *pipe) Do(ctx context.Context, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.Do(ctx, args...))
}

func (p *pipe) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.Eval(ctx, script, keys, args...))
}

func (p *pipe) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.EvalSha(ctx, sha1, keys, args...))
}

func (p *pipe) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.EvalRO(ctx, script, keys, args...))
}

func (p *pipe) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.EvalShaRO(ctx, sha1, keys, args...))
}

func (p *pipe) FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.FCall(ctx, function, keys, args...))
}

func (p *pipe) FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return p.queue(p.build.FCallRO(ctx, function, keys, args...))
}

func (p *pipe) Len() int { return len(p.cmds) + p.Pipeliner.Len() }

func (p *pipe) Discard() {
	p.cmds = nil
	p.Pipeliner.Discard()
}

// Exec sends the guarded commands, then any other, and returns them all
// with the first error, as go-redis's Exec does.
func (p *pipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	cmds := p.cmds
	p.cmds = nil
	p.g.exec(ctx, cmds, p.newPipe)
	if p.Pipeliner.Len() > 0 {
		more, _ := p.Pipeliner.Exec(ctx)
		cmds = append(cmds, more...)
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && err != redis.Nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// exec sends cmds in one pipeline (go-redis splits it by node) through
// the guard; the commands of a node the guard reaches through a client of
// its own go in a pipeline of that client.
func (g *guard) exec(ctx context.Context, cmds []redis.Cmder, newPipe func() redis.Pipeliner) {
	addrs := make([]string, len(cmds))
	vias := make([]*redis.Client, len(cmds))
	send := make([]int, 0, len(cmds))
	for i, cmd := range cmds {
		addr, via, err := g.before(ctx, firstKey(cmd.Args()))
		if err != nil {
			cmd.SetErr(err)
			continue
		}
		addrs[i], vias[i] = addr, via
		send = append(send, i)
	}
	run := func(idx []int) {
		// One pipeline per client: the user's, and each via.
		for len(idx) > 0 {
			via := vias[idx[0]]
			var q redis.Pipeliner
			if via != nil {
				q = via.Pipeline()
			} else {
				q = newPipe()
			}
			var these, rest []int
			for _, i := range idx {
				if vias[i] == via {
					these = append(these, i)
				} else {
					rest = append(rest, i)
				}
			}
			for _, i := range these {
				_ = q.Process(ctx, cmds[i])
			}
			if _, err := q.Exec(ctx); err != nil {
				// go-redis could not send them all (no connection): it
				// sets the error on no command. A reply of nil comes with
				// redis.Nil, so a command with neither was never answered.
				for _, i := range these {
					if c, ok := cmds[i].(*redis.Cmd); ok && c.Err() == nil && c.Val() == nil {
						c.SetErr(err)
					}
				}
			}
			idx = rest
		}
	}
	if len(send) > 0 {
		run(send)
	}
	var moved []int
	for _, i := range send {
		if vias[i] != nil && redirected(cmds[i].Err()) {
			vias[i] = nil // the slot moved: the user's client follows it
			moved = append(moved, i)
		}
	}
	if len(moved) > 0 {
		run(moved)
	}
	if g.cluster != nil {
		g.resendReadOnly(ctx, cmds, send, run)
	}
	for _, i := range send {
		g.after(ctx, addrs[i], vias[i], cmds[i].Err())
	}
}

// resendReadOnly sends again, as retryReadOnly does a single call, the
// commands of sent that met READONLY.
func (g *guard) resendReadOnly(ctx context.Context, cmds []redis.Cmder, sent []int, run func([]int)) {
	var ro []int
	for _, i := range sent {
		if readOnly(cmds[i].Err()) {
			ro = append(ro, i)
		}
	}
	if len(ro) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, readOnlyWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(ro) > 0 {
		g.cluster.ReloadState(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		run(ro)
		still := ro[:0]
		for _, i := range ro {
			if readOnly(cmds[i].Err()) {
				still = append(still, i)
			}
		}
		ro = still
	}
}
