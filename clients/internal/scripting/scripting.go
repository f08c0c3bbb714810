// Package scripting is a go-redis redis.Scripter over any client that can
// send a command and hand back its reply: the shared part of the rueidis
// and valkey-go adapters (clients/rueidis, clients/valkey), so that
// ratelimit and the generated bindings run over those clients unchanged.
//
// A Scripter behaves as go-redis's own clients do where a caller can tell:
// arguments are formatted by go-redis's rules (an int in decimal, a
// time.Duration as nanoseconds, a single []string or []any flattened);
// replies come back as go-redis would decode them (int64, string, nil
// elements, nested []any, redis.Nil for a nil reply); an error reply is a
// redis.Error with the server's text, ERR included, so
// redis.HasErrorPrefix(err, "NOSCRIPT") and redis.Script.Run's EVAL
// fallback work; a command is routed by its first key, so a script whose
// keys span slots meets the server's CROSSSLOT as it would through a
// *redis.ClusterClient; SCRIPT LOAD goes to every node.
package scripting

import (
	"context"
	"encoding"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Conn is what an adapter provides: one way to send a command.
type Conn interface {
	// Do sends the command name (in upper case, as Redis documents it)
	// with args, each written as Arg writes it, and returns the reply
	// decoded as go-redis decodes it (see the package doc), a nil reply
	// as redis.Nil and an error reply as an Error. key is the index in
	// args of the first key, which routes the command in a cluster, or -1
	// for a command without keys. readOnly marks EVAL_RO and EVALSHA_RO,
	// which a client may send to a replica and may retry.
	Do(ctx context.Context, name string, args []any, key int, readOnly bool) (any, error)
	// Nodes returns a Conn to each node (each shard's primary and
	// replicas in a cluster, the server alone otherwise), for the
	// commands that go to all of them: SCRIPT LOAD and SCRIPT EXISTS.
	Nodes() []Conn
	// Cluster reports a Redis Cluster, where a call's keys must share a
	// slot; otherwise every key is on the one primary.
	Cluster() bool
}

// Error is an error reply: the server's text after the "-" of RESP, such
// as "NOSCRIPT No matching script. Please use EVAL." or "BADARG cost ...".
// It is a redis.Error, as go-redis's own error replies are.
type Error string

func (e Error) Error() string { return string(e) }

// RedisError marks Error as a reply of the server (see redis.Error).
func (Error) RedisError() {}

var _ redis.Error = Error("")

// Scripter is a redis.Scripter over a Conn. It also has Del, which
// ratelimit's Limiter.Reset uses, and Process, through which the bindings
// send their script calls without copying them into a new command.
type Scripter struct {
	conn Conn
}

// New returns a Scripter that sends its commands through conn.
func New(conn Conn) *Scripter { return &Scripter{conn: conn} }

// Cluster reports whether the client is a Redis Cluster's: ratelimit then
// batches calls across keys only within a slot (and across any keys
// otherwise).
func (s *Scripter) Cluster() bool { return s.conn.Cluster() }

var _ redis.Scripter = (*Scripter)(nil)

func (s *Scripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "eval", script, keys, args)
}

func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "evalsha", sha1, keys, args)
}

func (s *Scripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "eval_ro", script, keys, args)
}

func (s *Scripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "evalsha_ro", sha1, keys, args)
}

// eval builds the command as go-redis's cmdable.eval does, so that the
// *redis.Cmd's Args and String read the same, and sends it.
func (s *Scripter) eval(ctx context.Context, name, payload string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 3+len(keys), 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = name, payload, len(keys)
	for i, k := range keys {
		cmdArgs[3+i] = k
	}
	cmdArgs = appendArgs(cmdArgs, args)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	s.send(ctx, cmd, scriptCommandOf(name), cmdArgs[1:], len(keys) > 0)
	return cmd
}

// Process sends cmd, a script call (EVAL, EVALSHA, EVAL_RO or EVALSHA_RO
// in a *redis.Cmd, as the bindings build theirs), and sets its reply, as a
// go-redis client's Process does. It refuses any other command.
func (s *Scripter) Process(ctx context.Context, cmd redis.Cmder) error {
	c, ok := cmd.(*redis.Cmd)
	args := cmd.Args()
	var name scriptCommand
	if ok && len(args) >= 3 {
		if n, isString := args[0].(string); isString {
			name = scriptCommandOf(n)
		}
	}
	if name.name == "" {
		err := fmt.Errorf("scripting: Process sends script calls in a *redis.Cmd, not %T %v", cmd, cmd.Name())
		cmd.SetErr(err)
		return err
	}
	keys, err := Arg(args[2])
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	s.send(ctx, c, name, args[1:], keys != "0")
	return c.Err()
}

// send sends a script call's arguments (the payload, the number of keys,
// the keys, the arguments) and sets cmd's reply.
func (s *Scripter) send(ctx context.Context, cmd *redis.Cmd, name scriptCommand, args []any, hasKeys bool) {
	key := -1
	if hasKeys {
		key = 2
	}
	v, err := s.conn.Do(ctx, name.name, args, key, name.readOnly)
	if err != nil {
		cmd.SetErr(err)
	} else {
		cmd.SetVal(v)
	}
}

// scriptCommand is a script call's name as it is sent, and whether it
// may not write.
type scriptCommand struct {
	name     string
	readOnly bool
}

// scriptCommandOf names the script call go-redis calls name ("" for any
// other command), as a constant: sending it builds no string.
func scriptCommandOf(name string) scriptCommand {
	switch name {
	case "eval", "EVAL":
		return scriptCommand{"EVAL", false}
	case "evalsha", "EVALSHA":
		return scriptCommand{"EVALSHA", false}
	case "eval_ro", "EVAL_RO":
		return scriptCommand{"EVAL_RO", true}
	case "evalsha_ro", "EVALSHA_RO":
		return scriptCommand{"EVALSHA_RO", true}
	}
	return scriptCommand{}
}

// ScriptLoad loads script on every node, as *redis.ClusterClient does, and
// returns the SHA1 the first node answered.
func (s *Scripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "script", "load", script)
	for _, n := range s.conn.Nodes() {
		v, err := n.Do(ctx, "SCRIPT", []any{"load", script}, -1, false)
		if err != nil {
			cmd.SetErr(err)
			return cmd
		}
		sha, ok := v.(string)
		if !ok {
			cmd.SetErr(fmt.Errorf("scripting: SCRIPT LOAD replied %T, want a string", v))
			return cmd
		}
		if cmd.Val() == "" {
			cmd.SetVal(sha)
		}
	}
	return cmd
}

// ScriptExists reports, for each hash, whether every node has the script
// (as *redis.ClusterClient does).
func (s *Scripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	cmdArgs := make([]any, 2+len(hashes))
	cmdArgs[0], cmdArgs[1] = "script", "exists"
	for i, h := range hashes {
		cmdArgs[2+i] = h
	}
	cmd := redis.NewBoolSliceCmd(ctx, cmdArgs...)
	all := make([]bool, len(hashes))
	for i := range all {
		all[i] = true
	}
	for _, n := range s.conn.Nodes() {
		v, err := n.Do(ctx, "SCRIPT", cmdArgs[1:], -1, false)
		if err != nil {
			cmd.SetErr(err)
			return cmd
		}
		got, ok := v.([]any)
		if !ok || len(got) != len(hashes) {
			cmd.SetErr(fmt.Errorf("scripting: SCRIPT EXISTS replied %v, want %d integers", v, len(hashes)))
			return cmd
		}
		for i, e := range got {
			n, ok := e.(int64)
			if !ok {
				cmd.SetErr(fmt.Errorf("scripting: SCRIPT EXISTS replied %v, want %d integers", v, len(hashes)))
				return cmd
			}
			all[i] = all[i] && n == 1
		}
	}
	cmd.SetVal(all)
	return cmd
}

// Del deletes keys, routed by the first (keys in other slots meet
// CROSSSLOT, as through a *redis.ClusterClient's pipeline).
func (s *Scripter) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	cmdArgs := make([]any, 1+len(keys))
	cmdArgs[0] = "del"
	for i, k := range keys {
		cmdArgs[1+i] = k
	}
	cmd := redis.NewIntCmd(ctx, cmdArgs...)
	key := 0
	if len(keys) == 0 {
		key = -1
	}
	v, err := s.conn.Do(ctx, "DEL", cmdArgs[1:], key, false)
	switch n, ok := v.(int64); {
	case err != nil:
		cmd.SetErr(err)
	case !ok:
		cmd.SetErr(fmt.Errorf("scripting: DEL replied %T, want an integer", v))
	default:
		cmd.SetVal(n)
	}
	return cmd
}

// appendArgs flattens a single slice argument, as go-redis does.
func appendArgs(dst, src []any) []any {
	if len(src) == 1 {
		switch a := src[0].(type) {
		case []string:
			for _, s := range a {
				dst = append(dst, s)
			}
			return dst
		case []any:
			return append(dst, a...)
		}
	}
	return append(dst, src...)
}

// Arg writes one argument as go-redis's proto.Writer.WriteArg does. What
// it cannot write (maps, structs: go-redis flattens those by reflection) is
// an error, and the adapter sends nothing.
func Arg(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case *string:
		return *v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case *int:
		return strconv.FormatInt(int64(*v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case *int8:
		return strconv.FormatInt(int64(*v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case *int16:
		return strconv.FormatInt(int64(*v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case *int32:
		return strconv.FormatInt(int64(*v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case *int64:
		return strconv.FormatInt(*v, 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case *uint:
		return strconv.FormatUint(uint64(*v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case *uint8:
		return strconv.FormatUint(uint64(*v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case *uint16:
		return strconv.FormatUint(uint64(*v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case *uint32:
		return strconv.FormatUint(uint64(*v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case *uint64:
		return strconv.FormatUint(*v, 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), nil
	case *float32:
		return strconv.FormatFloat(float64(*v), 'f', -1, 64), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case *float64:
		return strconv.FormatFloat(*v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case *bool:
		if *v {
			return "1", nil
		}
		return "0", nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10), nil
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		if err != nil {
			return "", err
		}
		return string(b), nil
	case net.IP:
		return string(v), nil
	default:
		return "", fmt.Errorf("redis: can't marshal %T (implement encoding.BinaryMarshaler)", v)
	}
}
