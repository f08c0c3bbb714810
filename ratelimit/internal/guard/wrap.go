package guard

// The clients that go through a guard: a redis.Scripter over a
// *redis.Client or *redis.ClusterClient, and the Functions library over
// either.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// guarded is a redis.Scripter that goes through a guard. It passes on
// what the rest of the package asks of a client: Process (the bindings'
// cheaper EVALSHA), Pipeline (batches, guarded) and Del (Reset).
type guarded struct {
	redis.Scripter
	g *guard
}

// functions is the Functions library over a guarded client; user is the
// FunctionsClient the user passed. (The embedded client's own methods make
// it the bindings' router.)
type functions struct {
	*bindings.FunctionsClient
	user *bindings.FunctionsClient
	g    *guard // the guard of the client under it
}

// Wrap wraps the clients the guard knows: a *redis.Client, a
// *redis.ClusterClient, and a bindings.FunctionsClient over either. Any
// other client (a Ring, go-redis's AutoPipeliner) is returned as is.
func Wrap(c redis.Scripter) redis.Scripter {
	switch c := c.(type) {
	case *redis.Client:
		return &guarded{Scripter: c, g: newGuard(c, nil)}
	case *redis.ClusterClient:
		return &guarded{Scripter: c, g: newGuard(nil, c)}
	case *bindings.FunctionsClient:
		var g *guard
		fc := c.Wrap(func(in bindings.FunctionsCmdable) bindings.FunctionsCmdable {
			switch in := in.(type) {
			case *redis.Client:
				g = newGuard(in, nil)
				return &fnClient{in, g}
			case *redis.ClusterClient:
				g = newGuard(nil, in)
				return &fnCluster{fnClient{in, g}, in}
			}
			return in
		})
		if g != nil {
			return &functions{FunctionsClient: fc, user: c, g: g}
		}
	}
	return c
}

// Unwrap returns the client the user passed.
func Unwrap(c redis.Scripter) redis.Scripter {
	switch c := c.(type) {
	case *guarded:
		return c.Scripter
	case *functions:
		return c.user
	}
	return c
}

func newGuard(client *redis.Client, cluster *redis.ClusterClient) *guard {
	return &guard{client: client, cluster: cluster, open: map[string]*breaker{}}
}

func (c *guarded) Process(ctx context.Context, cmd redis.Cmder) error {
	p := c.Scripter.(interface {
		Process(context.Context, redis.Cmder) error
	})
	return c.g.process(ctx, cmd, p.Process)
}

// process sends cmd with send, or through the guard's own client, through
// the guard. (Spelled out rather than through do, so that a decision
// allocates no closure.)
func (g *guard) process(ctx context.Context, cmd redis.Cmder, send func(context.Context, redis.Cmder) error) error {
	key := firstKey(cmd.Args())
	addr, via, err := g.before(ctx, key)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	user := send
	if via != nil {
		send = via.Process
	}
	start := time.Now()
	err = send(ctx, cmd)
	if err != nil {
		err = g.redial(ctx, time.Since(start), err, func() error { return send(ctx, cmd) })
	}
	if via != nil && redirected(err) {
		err = user(ctx, cmd) // the slot moved: the user's client follows it
	}
	if readOnly(err) {
		err = g.retryReadOnly(ctx, err, func() error { return send(ctx, cmd) })
	}
	g.after(ctx, addr, via, err)
	return err
}

// Down reports whether a call on key would fail at once, its node's
// breaker open: the send stage across keys (internal/multikey) then sends
// it on its own, not behind a batch the node holds.
func (c *guarded) Down(key string) bool { return c.g.down(key) }

func (c *guarded) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd { return s.Eval(ctx, script, keys, args...) }, c.Scripter)
}

func (c *guarded) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd { return s.EvalSha(ctx, sha1, keys, args...) }, c.Scripter)
}

func (c *guarded) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd { return s.EvalRO(ctx, script, keys, args...) }, c.Scripter)
}

func (c *guarded) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd { return s.EvalShaRO(ctx, sha1, keys, args...) }, c.Scripter)
}

// cmd sends one call whose first key is keys[0] through g: send on user,
// or on the guard's own client of the node.
func (g *guard) cmd(ctx context.Context, keys []string, send func(redis.Scripter) *redis.Cmd, user redis.Scripter) *redis.Cmd {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	var cmd *redis.Cmd
	err := g.do(ctx, key, func(via *redis.Client) error {
		if via != nil {
			cmd = send(via)
		} else {
			cmd = send(user)
		}
		return cmd.Err()
	})
	if cmd == nil {
		cmd = redis.NewCmd(ctx)
		cmd.SetErr(err)
	}
	return cmd
}

// Pipeline returns a pipeline whose commands go through the guard (All's
// batches).
func (c *guarded) Pipeline() redis.Pipeliner {
	return c.g.pipeline(c.Scripter.(interface{ Pipeline() redis.Pipeliner }).Pipeline)
}

// Del is for Reset.
func (c *guarded) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return c.Scripter.(interface {
		Del(context.Context, ...string) *redis.IntCmd
	}).Del(ctx, keys...)
}

// fnClient is what the Functions library sends through: the user's client,
// its FCALLs and pipelines through the guard.
type fnClient struct {
	bindings.FunctionsCmdable
	g *guard
}

func (c *fnClient) FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd {
		return s.(functionCaller).FCall(ctx, function, keys, args...)
	}, c.FunctionsCmdable)
}

func (c *fnClient) FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func(s redis.Scripter) *redis.Cmd {
		return s.(functionCaller).FCallRO(ctx, function, keys, args...)
	}, c.FunctionsCmdable)
}

// functionCaller is a client with FCALL: the user's, or the guard's own.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
	FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
}

func (c *fnClient) Pipeline() redis.Pipeliner { return c.g.pipeline(c.FunctionsCmdable.Pipeline) }

// PrimaryFor gives the library's check of a key's server the guard's
// route, as its calls have: failed at once while the server is down (which
// starts a probe), through the guard's own client while the user's cannot
// dial it yet.
func (c *fnClient) PrimaryFor(ctx context.Context, key string) (string, bindings.FunctionsCmdable, error) {
	n := c.g.fnNode(c.g.client)
	return n.addr, n, nil
}

// fnCluster is fnClient over a cluster, with what the library asks of one:
// the primary of a key, every primary, and a fresh slot map.
type fnCluster struct {
	fnClient
	cluster *redis.ClusterClient
}

func (c *fnCluster) PrimaryFor(ctx context.Context, key string) (string, bindings.FunctionsCmdable, error) {
	if key == "" {
		return "*", nil, nil // every primary
	}
	m, err := c.cluster.MasterForKey(ctx, key)
	if err != nil {
		return "", nil, err
	}
	n := c.g.fnNode(m)
	return n.addr, n, nil
}

func (c *fnCluster) ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error {
	return c.cluster.ForEachMaster(ctx, fn)
}

func (c *fnCluster) ReloadState(ctx context.Context) { c.cluster.ReloadState(ctx) }

// fnNode is one server as the library's check sees it: its FUNCTION
// commands through the guard.
type fnNode struct {
	*redis.Client
	g    *guard
	addr string
}

// fnNode returns c's fnNode, made once: every call of the library asks for
// its key's.
func (g *guard) fnNode(c *redis.Client) *fnNode {
	if n, ok := g.nodes.Load(c); ok {
		return n.(*fnNode)
	}
	n, _ := g.nodes.LoadOrStore(c, &fnNode{c, g, c.Options().Addr})
	return n.(*fnNode)
}

func (n *fnNode) FunctionList(ctx context.Context, q redis.FunctionListQuery) *redis.FunctionListCmd {
	cmd := redis.NewFunctionListCmd(ctx)
	err := n.g.doNode(ctx, n.addr, n.Client, func(c *redis.Client) error { cmd = c.FunctionList(ctx, q); return cmd.Err() })
	cmd.SetErr(err)
	return cmd
}

func (n *fnNode) FunctionLoad(ctx context.Context, code string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx)
	err := n.g.doNode(ctx, n.addr, n.Client, func(c *redis.Client) error { cmd = c.FunctionLoad(ctx, code); return cmd.Err() })
	cmd.SetErr(err)
	return cmd
}

func (n *fnNode) FunctionLoadReplace(ctx context.Context, code string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx)
	err := n.g.doNode(ctx, n.addr, n.Client, func(c *redis.Client) error { cmd = c.FunctionLoadReplace(ctx, code); return cmd.Err() })
	cmd.SetErr(err)
	return cmd
}
