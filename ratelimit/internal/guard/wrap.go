package guard

// The clients that go through a guard: a redis.Scripter over a
// *redis.Client or *redis.ClusterClient, and the Functions library over
// either.

import (
	"context"

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
		wrapped := false
		fc := c.Wrap(func(in bindings.FunctionsCmdable) bindings.FunctionsCmdable {
			switch in := in.(type) {
			case *redis.Client:
				wrapped = true
				return &fnClient{in, newGuard(in, nil)}
			case *redis.ClusterClient:
				wrapped = true
				return &fnCluster{fnClient{in, newGuard(nil, in)}, in}
			}
			return in
		})
		if wrapped {
			return &functions{FunctionsClient: fc, user: c}
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

// process sends cmd with send through the guard. (Spelled out rather than
// through do, so that a decision allocates no closure.)
func (g *guard) process(ctx context.Context, cmd redis.Cmder, send func(context.Context, redis.Cmder) error) error {
	key := firstKey(cmd.Args())
	addr, err := g.before(ctx, key)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	err = send(ctx, cmd)
	if readOnly(err) {
		err = g.retryReadOnly(ctx, err, func() error { return send(ctx, cmd) })
	}
	g.after(ctx, addr, err)
	return err
}

func (c *guarded) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.Scripter.Eval(ctx, script, keys, args...) })
}

func (c *guarded) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.Scripter.EvalSha(ctx, sha1, keys, args...) })
}

func (c *guarded) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.Scripter.EvalRO(ctx, script, keys, args...) })
}

func (c *guarded) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.Scripter.EvalShaRO(ctx, sha1, keys, args...) })
}

// cmd runs send, one call whose first key is keys[0], through g.
func (g *guard) cmd(ctx context.Context, keys []string, send func() *redis.Cmd) *redis.Cmd {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	var cmd *redis.Cmd
	if err := g.do(ctx, key, func() error { cmd = send(); return cmd.Err() }); cmd == nil {
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
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.FunctionsCmdable.FCall(ctx, function, keys, args...) })
}

func (c *fnClient) FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd {
	return c.g.cmd(ctx, keys, func() *redis.Cmd { return c.FunctionsCmdable.FCallRO(ctx, function, keys, args...) })
}

func (c *fnClient) Pipeline() redis.Pipeliner { return c.g.pipeline(c.FunctionsCmdable.Pipeline) }

// fnCluster is fnClient over a cluster, with what the library asks of one:
// the primary of a key, every primary, and a fresh slot map.
type fnCluster struct {
	fnClient
	cluster *redis.ClusterClient
}

func (c *fnCluster) MasterForKey(ctx context.Context, key string) (*redis.Client, error) {
	return c.cluster.MasterForKey(ctx, key)
}

func (c *fnCluster) ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error {
	return c.cluster.ForEachMaster(ctx, fn)
}

func (c *fnCluster) ReloadState(ctx context.Context) { c.cluster.ReloadState(ctx) }
