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
	// Do sends argv and returns the reply decoded as go-redis decodes it
	// (see the package doc), a nil reply as redis.Nil and an error reply
	// as an Error. keyPos is the index in argv of the first key, which
	// routes the command in a cluster, or 0 for a command without keys.
	// readOnly marks EVAL_RO and EVALSHA_RO, which a client may send to
	// a replica and may retry.
	Do(ctx context.Context, argv []string, keyPos int, readOnly bool) (any, error)
	// Nodes returns a Conn to each node (each shard's primary and
	// replicas in a cluster, the server alone otherwise), for the
	// commands that go to all of them: SCRIPT LOAD and SCRIPT EXISTS.
	Nodes() []Conn
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
// ratelimit's Limiter.Reset uses.
type Scripter struct {
	conn Conn
}

// New returns a Scripter that sends its commands through conn.
func New(conn Conn) *Scripter { return &Scripter{conn: conn} }

var _ redis.Scripter = (*Scripter)(nil)

func (s *Scripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "eval", script, keys, args, false)
}

func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "evalsha", sha1, keys, args, false)
}

func (s *Scripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "eval_ro", script, keys, args, true)
}

func (s *Scripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.eval(ctx, "evalsha_ro", sha1, keys, args, true)
}

// eval builds the command as go-redis's cmdable.eval does, so that the
// *redis.Cmd's Args and String read the same, and sends it.
func (s *Scripter) eval(ctx context.Context, name, payload string, keys []string, args []any, readOnly bool) *redis.Cmd {
	cmdArgs := make([]any, 3+len(keys), 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = name, payload, len(keys)
	for i, k := range keys {
		cmdArgs[3+i] = k
	}
	cmdArgs = appendArgs(cmdArgs, args)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	argv, err := format(cmdArgs)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	keyPos := 0
	if len(keys) > 0 {
		keyPos = 3
	}
	v, err := s.conn.Do(ctx, argv, keyPos, readOnly)
	if err != nil {
		cmd.SetErr(err)
	} else {
		cmd.SetVal(v)
	}
	return cmd
}

// ScriptLoad loads script on every node, as *redis.ClusterClient does, and
// returns the SHA1 the first node answered.
func (s *Scripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "script", "load", script)
	for _, n := range s.conn.Nodes() {
		v, err := n.Do(ctx, []string{"script", "load", script}, 0, false)
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
	argv := append([]string{"script", "exists"}, hashes...)
	cmdArgs := make([]any, len(argv))
	for i, a := range argv {
		cmdArgs[i] = a
	}
	cmd := redis.NewBoolSliceCmd(ctx, cmdArgs...)
	all := make([]bool, len(hashes))
	for i := range all {
		all[i] = true
	}
	for _, n := range s.conn.Nodes() {
		v, err := n.Do(ctx, argv, 0, false)
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
	argv := append([]string{"del"}, keys...)
	cmdArgs := make([]any, len(argv))
	for i, a := range argv {
		cmdArgs[i] = a
	}
	cmd := redis.NewIntCmd(ctx, cmdArgs...)
	keyPos := 1
	if len(keys) == 0 {
		keyPos = 0
	}
	v, err := s.conn.Do(ctx, argv, keyPos, false)
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

// format writes each argument as go-redis's proto.Writer.WriteArg does.
// What it cannot write (maps, structs: go-redis flattens those by
// reflection) is an error, and nothing is sent.
func format(args []any) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, err := formatArg(a)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func formatArg(v any) (string, error) {
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
