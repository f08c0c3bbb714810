package luatest

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

var (
	errWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	errNotInt    = errors.New("ERR value is not an integer or out of range")
	errNotFloat  = errors.New("ERR value is not a valid float")
	errSyntax    = errors.New("ERR syntax error")
)

func errArity(cmd string) error {
	return fmt.Errorf("ERR wrong number of arguments for '%s' command", strings.ToLower(cmd))
}

// exec runs one command. Only the commands the bundled scripts need exist;
// anything else fails loudly so a new dependency on a command is noticed.
func (r *Redis) exec(argv []string) (any, error) {
	cmd, args := strings.ToUpper(argv[0]), argv[1:]
	need := func(min int, even bool) error {
		if len(args) < min || (even && (len(args)-min)%2 != 0) {
			return errArity(cmd)
		}
		return nil
	}
	switch cmd {
	case "TIME":
		return []any{strconv.FormatInt(r.now/1e6, 10), strconv.FormatInt(r.now%1e6, 10)}, nil
	case "GET":
		if err := need(1, false); err != nil {
			return nil, err
		}
		v, err := r.typed(args[0], "string")
		if v == nil {
			return nil, err
		}
		return v.str, nil
	case "SET":
		return r.set(args)
	case "DEL":
		n := int64(0)
		for _, k := range args {
			if r.get(k) != nil {
				delete(r.data, k)
				n++
			}
		}
		return n, nil
	case "PEXPIRE":
		if err := need(2, false); err != nil {
			return nil, err
		}
		ms, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return nil, errNotInt
		}
		if ms <= 0 {
			return nil, fmt.Errorf("luatest: PEXPIRE %s %d deletes the key: a TTL must be positive", args[0], ms)
		}
		v := r.get(args[0])
		if v == nil {
			return int64(0), nil
		}
		v.expireAt = r.now + ms*1000
		return int64(1), nil
	case "PTTL":
		if err := need(1, false); err != nil {
			return nil, err
		}
		return r.PTTL(args[0]), nil
	case "HGET", "HMGET":
		if err := need(2, false); err != nil {
			return nil, err
		}
		v, err := r.typed(args[0], "hash")
		if err != nil {
			return nil, err
		}
		out := make([]any, len(args)-1)
		for i, f := range args[1:] {
			if s, ok := v.hashField(f); ok {
				out[i] = s
			}
		}
		if cmd == "HGET" {
			return out[0], nil
		}
		return out, nil
	case "HLEN":
		if err := need(1, false); err != nil {
			return nil, err
		}
		v, err := r.typed(args[0], "hash")
		if err != nil {
			return nil, err
		}
		return int64(len(v.hash)), nil
	case "HSET":
		if err := need(3, true); err != nil {
			return nil, err
		}
		v, err := r.create(args[0], "hash")
		if err != nil {
			return nil, err
		}
		n := int64(0)
		for i := 1; i < len(args); i += 2 {
			if _, ok := v.hash[args[i]]; !ok {
				n++
			}
			v.hash[args[i]] = args[i+1]
		}
		return n, nil
	case "ZADD":
		return r.zadd(args)
	case "ZCARD":
		if err := need(1, false); err != nil {
			return nil, err
		}
		v, err := r.typed(args[0], "zset")
		if v == nil {
			return int64(0), err
		}
		return int64(len(v.zset)), nil
	case "ZREMRANGEBYSCORE":
		if err := need(3, false); err != nil {
			return nil, err
		}
		min, minEx, err1 := parseBound(args[1])
		max, maxEx, err2 := parseBound(args[2])
		if err1 != nil || err2 != nil {
			return nil, errors.New("ERR min or max is not a float")
		}
		v, err := r.typed(args[0], "zset")
		if v == nil {
			return int64(0), err
		}
		n := int64(0)
		for m, s := range v.zset {
			if inRange(s, min, minEx, max, maxEx) {
				delete(v.zset, m)
				n++
			}
		}
		if len(v.zset) == 0 {
			delete(r.data, args[0])
		}
		return n, nil
	case "ZCOUNT":
		if err := need(3, false); err != nil {
			return nil, err
		}
		min, minEx, err1 := parseBound(args[1])
		max, maxEx, err2 := parseBound(args[2])
		if err1 != nil || err2 != nil {
			return nil, errors.New("ERR min or max is not a float")
		}
		v, err := r.typed(args[0], "zset")
		if v == nil {
			return int64(0), err
		}
		n := int64(0)
		for _, s := range v.zset {
			if inRange(s, min, minEx, max, maxEx) {
				n++
			}
		}
		return n, nil
	case "ZRANGE":
		return r.zrange(args)
	case "ZSCORE":
		if err := need(2, false); err != nil || len(args) != 2 {
			return nil, errArity(cmd)
		}
		v, err := r.typed(args[0], "zset")
		if v == nil {
			return nil, err
		}
		s, ok := v.zset[args[1]]
		if !ok {
			return nil, nil
		}
		return strconv.FormatFloat(s, 'g', 17, 64), nil
	case "ZREM":
		if err := need(2, false); err != nil {
			return nil, err
		}
		v, err := r.typed(args[0], "zset")
		if v == nil {
			return int64(0), err
		}
		n := int64(0)
		for _, m := range args[1:] {
			if _, ok := v.zset[m]; ok {
				delete(v.zset, m)
				n++
			}
		}
		if len(v.zset) == 0 {
			delete(r.data, args[0])
		}
		return n, nil
	}
	return nil, fmt.Errorf("luatest: %s is not a command the bundled scripts may use", cmd)
}

func (v *value) hashField(f string) (string, bool) {
	s, ok := v.hash[f]
	return s, ok
}

// typed returns the live value at key if it has the wanted kind, nil if the
// key does not exist, and WRONGTYPE otherwise. A missing hash reads as empty.
func (r *Redis) typed(key, kind string) (*value, error) {
	v := r.get(key)
	if v == nil {
		if kind == "hash" {
			return &value{kind: "hash"}, nil
		}
		return nil, nil
	}
	if v.kind != kind {
		return nil, errWrongType
	}
	return v, nil
}

// create returns the value at key, making an empty one of kind if needed.
func (r *Redis) create(key, kind string) (*value, error) {
	v := r.get(key)
	if v == nil {
		v = &value{kind: kind, hash: map[string]string{}, zset: map[string]float64{}}
		r.data[key] = v
	}
	if v.kind != kind {
		return nil, errWrongType
	}
	return v, nil
}

// set supports SET key value [PX ms | EX s] [KEEPTTL].
func (r *Redis) set(args []string) (any, error) {
	if len(args) < 2 {
		return nil, errArity("SET")
	}
	expireAt := int64(0)
	for i := 2; i < len(args); i++ {
		switch opt := strings.ToUpper(args[i]); opt {
		case "KEEPTTL":
			if old := r.data[args[0]]; old != nil && old.expireAt > r.now {
				expireAt = old.expireAt
			}
		case "PX", "EX":
			if i+1 >= len(args) {
				return nil, errSyntax
			}
			n, err := strconv.ParseInt(args[i+1], 10, 64)
			if err != nil {
				return nil, errNotInt
			}
			if n <= 0 {
				return nil, errors.New("ERR invalid expire time in 'set' command")
			}
			unit := int64(1000)
			if opt == "EX" {
				unit = 1000000
			}
			expireAt = r.now + n*unit
			i++
		default:
			return nil, errSyntax
		}
	}
	r.data[args[0]] = &value{kind: "string", str: args[1], expireAt: expireAt}
	return "OK", nil
}

func (r *Redis) zadd(args []string) (any, error) {
	if len(args) < 3 || len(args)%2 != 1 {
		return nil, errArity("ZADD")
	}
	v, err := r.create(args[0], "zset")
	if err != nil {
		return nil, err
	}
	n := int64(0)
	for i := 1; i < len(args); i += 2 {
		s, err := strconv.ParseFloat(args[i], 64)
		if err != nil || math.IsNaN(s) {
			return nil, errNotFloat
		}
		if _, ok := v.zset[args[i+1]]; !ok {
			n++
		}
		v.zset[args[i+1]] = s
	}
	return n, nil
}

// zrange supports ZRANGE key start stop [WITHSCORES] by index.
func (r *Redis) zrange(args []string) (any, error) {
	if len(args) < 3 || len(args) > 4 {
		return nil, errArity("ZRANGE")
	}
	withScores := len(args) == 4
	if withScores && strings.ToUpper(args[3]) != "WITHSCORES" {
		return nil, errSyntax
	}
	start, err1 := strconv.ParseInt(args[1], 10, 64)
	stop, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errNotInt
	}
	v, err := r.typed(args[0], "zset")
	if v == nil {
		return []any{}, err
	}
	type entry struct {
		m string
		s float64
	}
	all := make([]entry, 0, len(v.zset))
	for m, s := range v.zset {
		all = append(all, entry{m, s})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].s != all[j].s {
			return all[i].s < all[j].s
		}
		return all[i].m < all[j].m
	})
	n := int64(len(all))
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	stop = min(stop, n-1)
	out := []any{}
	for i := start; i <= stop; i++ {
		out = append(out, all[i].m)
		if withScores {
			out = append(out, strconv.FormatFloat(all[i].s, 'g', 17, 64))
		}
	}
	return out, nil
}

func parseBound(s string) (float64, bool, error) {
	ex := strings.HasPrefix(s, "(")
	s = strings.TrimPrefix(s, "(")
	switch s {
	case "-inf":
		return math.Inf(-1), ex, nil
	case "+inf", "inf":
		return math.Inf(1), ex, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, ex, err
}

func inRange(s, min float64, minEx bool, max float64, maxEx bool) bool {
	return (s > min || (!minEx && s == min)) && (s < max || (!maxEx && s == max))
}
