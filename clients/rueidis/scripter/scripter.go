// Package scripter runs redlimit over rueidis: New turns a rueidis.Client
// into a go-redis redis.Scripter, which ratelimit.New and the generated
// bindings take as they take a *redis.Client.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	...
//	limiter, err := ratelimit.New(scripter.New(client), "api", ratelimit.PerSecond(10))
//
// rueidis pipelines the commands of concurrent callers on shared
// connections by default, which is where its speed comes from; a Redis
// Cluster is found from InitAddress and each script is routed by its first
// key. rueidis never retries a script that may write (EVAL, EVALSHA), so a
// decision runs at most once; a context's deadline ends the wait for a
// reply (the command may still run on the server, as with go-redis).
//
// Replies and errors read exactly as go-redis's (see
// github.com/redlimit/redlimit/clients/internal/scripting): an error reply is a
// redis.Error with the server's text, so redis.Script.Run's fallback from
// NOSCRIPT to EVAL and the bindings' error codes work unchanged.
package scripter

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlimit/redlimit/clients/internal/scripting"
)

// Scripter is a redis.Scripter over a rueidis.Client, with Del (for
// Limiter.Reset) and Process (the bindings send their calls through it).
type Scripter = scripting.Scripter

// New returns a Scripter that sends every command through c. Closing c is
// the caller's business.
func New(c rueidis.Client) *Scripter { return scripting.New(conn{c}) }

type conn struct{ c rueidis.Client }

func (c conn) Do(ctx context.Context, name string, args []any, key int, readOnly bool) (any, error) {
	b := c.c.B().Arbitrary(name)
	for i, a := range args {
		s, err := scripting.Arg(a)
		if err != nil {
			return nil, err // nothing is sent
		}
		// Only the first key routes: rueidis's builder would panic on keys
		// of several slots in a cluster, where the server's CROSSSLOT is the
		// answer a caller expects.
		if i == key {
			b = b.Keys(s)
		} else {
			b = b.Args(s)
		}
	}
	var cmd rueidis.Completed
	if readOnly {
		cmd = b.ReadOnly()
	} else {
		cmd = b.Build()
	}
	res := c.c.Do(ctx, cmd)
	if err := res.NonRedisError(); err != nil {
		return nil, err
	}
	msg, _ := res.ToMessage()
	return decode(&msg, true)
}

func (c conn) Cluster() bool { return c.c.Mode() == rueidis.ClientModeCluster }

func (c conn) Nodes() []scripting.Conn {
	var out []scripting.Conn
	for _, n := range c.c.Nodes() {
		out = append(out, conn{n})
	}
	return out
}

// decode turns a reply into what go-redis's reader returns: a nil reply is
// redis.Nil at the top and nil inside an array, where an error reply is an
// element of its own.
func decode(m *rueidis.RedisMessage, top bool) (any, error) {
	switch {
	case m.IsNil():
		if top {
			return nil, redis.Nil
		}
		return nil, nil
	case m.Error() != nil:
		// rueidis drops a leading "ERR " from the error it returns; the
		// message's own text keeps it, as go-redis does.
		text, _ := m.ToString()
		return nil, scripting.Error(text)
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
			v, err := decode(&elems[i], false)
			if err != nil {
				v = err
			}
			out[i] = v
		}
		return out, nil
	case m.IsMap():
		fields, err := m.AsMap()
		if err != nil {
			return nil, err
		}
		out := make(map[any]any, len(fields))
		for k, f := range fields {
			v, err := decode(&f, false)
			if err != nil {
				v = err
			}
			out[k] = v
		}
		return out, nil
	}
	// A verbatim string or a big number (RESP3 only; no bundled script
	// returns one): rueidis's own reading of it.
	return m.ToAny()
}
