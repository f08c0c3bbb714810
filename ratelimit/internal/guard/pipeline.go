package guard

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipe is a redis.Pipeliner whose scripting commands (EVAL, EVALSHA, FCALL
// and their _RO forms, and Process and Do) go through the guard at Exec,
// each as a single call would: failed at once where its node's breaker is
// open, sent through the guard's own client where it has one, sent again
// on READONLY, and opening the breaker of a node that did not answer.
// Those are all a Batch of the bindings sends; any other command goes to
// the client's pipeline as it is, and is sent after them.
type pipe struct {
	redis.Pipeliner // the client's own
	newPipe         func() redis.Pipeliner
	g               *guard
	cmds            []redis.Cmder
}

func (g *guard) pipeline(newPipe func() redis.Pipeliner) redis.Pipeliner {
	return &pipe{Pipeliner: newPipe(), newPipe: newPipe, g: g}
}

func (p *pipe) Process(ctx context.Context, cmd redis.Cmder) error {
	p.cmds = append(p.cmds, cmd)
	return nil
}

func (p *pipe) Do(ctx context.Context, args ...interface{}) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	p.cmds = append(p.cmds, cmd)
	return cmd
}

// script queues a scripting command as go-redis's own builds it (name,
// script or function, numkeys, keys, args), except that a single slice
// argument is not flattened: the bindings never pass one.
func (p *pipe) script(ctx context.Context, name, what string, keys []string, args []interface{}) *redis.Cmd {
	argv := make([]interface{}, 0, 3+len(keys)+len(args))
	argv = append(argv, name, what, len(keys))
	for _, k := range keys {
		argv = append(argv, k)
	}
	cmd := redis.NewCmd(ctx, append(argv, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	p.cmds = append(p.cmds, cmd)
	return cmd
}

func (p *pipe) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "eval", script, keys, args)
}

func (p *pipe) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "evalsha", sha1, keys, args)
}

func (p *pipe) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "eval_ro", script, keys, args)
}

func (p *pipe) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "evalsha_ro", sha1, keys, args)
}

func (p *pipe) FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "fcall", function, keys, args)
}

func (p *pipe) FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return p.script(ctx, "fcall_ro", function, keys, args)
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
	newPipe := p.newPipe
	if p.Pipeliner.Len() == 0 { // the client's own pipeline sends the first batch
		reuse := true
		newPipe = func() redis.Pipeliner {
			if reuse {
				reuse = false
				return p.Pipeliner
			}
			return p.newPipe()
		}
	}
	p.g.exec(ctx, cmds, newPipe)
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

// sending is one command of a pipeline that the guard lets through.
type sending struct {
	cmd  redis.Cmder
	addr string
	via  *redis.Client // the guard's own client of the node, or nil
}

// exec sends cmds in one pipeline (go-redis splits it by node) through
// the guard; the commands of a node the guard reaches through a client of
// its own go in a pipeline of that client.
func (g *guard) exec(ctx context.Context, cmds []redis.Cmder, newPipe func() redis.Pipeliner) {
	send := make([]sending, 0, len(cmds))
	for _, cmd := range cmds {
		addr, via, err := g.before(ctx, firstKey(cmd.Args()))
		if err != nil {
			cmd.SetErr(err)
			continue
		}
		send = append(send, sending{cmd, addr, via})
	}
	start := time.Now()
	g.run(ctx, send, newPipe)
	g.redialPipeline(ctx, time.Since(start), send, newPipe)
	moved := send[:0:0]
	for _, s := range send {
		if s.via != nil && redirected(s.cmd.Err()) {
			s.via = nil // the slot moved: the user's client follows it
			moved = append(moved, s)
		}
	}
	g.run(ctx, moved, newPipe)
	if g.cluster != nil {
		g.resendReadOnly(ctx, send, newPipe)
	}
	for _, s := range send {
		g.after(ctx, s.addr, s.via, s.cmd.Err())
	}
}

// redialPipeline is redial for the commands of a pipeline whose dial
// error was another caller's (borrowedDial): nothing of them was sent.
func (g *guard) redialPipeline(ctx context.Context, took time.Duration, send []sending, newPipe func() redis.Pipeliner) {
	pause := time.Millisecond
	for i := 0; i < 5; i++ {
		var again []sending
		for _, s := range send {
			if g.borrowedDial(ctx, took, s.cmd.Err()) {
				again = append(again, s)
			}
		}
		if len(again) == 0 {
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause *= 2
		start := time.Now()
		g.run(ctx, again, newPipe)
		took = time.Since(start)
	}
}

// run sends each command of send in a pipeline of its client: the user's
// (newPipe), or the guard's own of its node.
func (g *guard) run(ctx context.Context, send []sending, newPipe func() redis.Pipeliner) {
	if len(send) == 0 {
		return
	}
	var buf [4]*redis.Client
	clients := append(buf[:0], send[0].via) // nil for the user's
	for _, s := range send[1:] {
		known := false
		for _, c := range clients {
			known = known || c == s.via
		}
		if !known {
			clients = append(clients, s.via)
		}
	}
	for _, via := range clients {
		var q redis.Pipeliner
		if via != nil {
			q = via.Pipeline()
		} else {
			q = newPipe()
		}
		for _, s := range send {
			if s.via == via {
				_ = q.Process(ctx, s.cmd)
			}
		}
		if _, err := q.Exec(ctx); err != nil {
			// go-redis could not send them all (no connection): it sets
			// the error on no command. A reply of nil comes with
			// redis.Nil, so a command with neither was never answered.
			for _, s := range send {
				if c, ok := s.cmd.(*redis.Cmd); ok && s.via == via && c.Err() == nil && c.Val() == nil {
					c.SetErr(err)
				}
			}
		}
	}
}

// resendReadOnly sends again, as retryReadOnly does a single call, the
// commands of send that met READONLY.
func (g *guard) resendReadOnly(ctx context.Context, send []sending, newPipe func() redis.Pipeliner) {
	var ro []sending
	for _, s := range send {
		if readOnly(s.cmd.Err()) {
			ro = append(ro, s)
		}
	}
	if len(ro) == 0 {
		return
	}
	wait, cancel := context.WithTimeout(ctx, readOnlyWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(ro) > 0 {
		g.cluster.ReloadState(wait)
		select {
		case <-wait.Done():
			return
		case <-tick.C:
		}
		g.run(ctx, ro, newPipe)
		still := ro[:0]
		for _, s := range ro {
			if readOnly(s.cmd.Err()) {
				still = append(still, s)
			}
		}
		ro = still
	}
}
