// Package luatest runs the bundled scripts in gopher-lua against an
// in-memory stand-in for the few Redis commands they use. The stand-in is
// strict on purpose: a command it does not know, a Lua number where Redis
// wants an integer string, or a TTL that is not positive is an error, so a
// script that would misbehave on a real server fails here first.
package luatest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/redlimit/redlimit/tests/scenario"
)

// ErrorReply is an error reply, as Redis would send it.
type ErrorReply string

func (e ErrorReply) Error() string { return string(e) }

type value struct {
	kind     string // "string", "hash" or "zset"
	str      string
	hash     map[string]string
	zset     map[string]float64
	expireAt int64 // µs; 0 means no TTL
}

func (v *value) clone() *value {
	c := *v
	c.hash = maps.Clone(v.hash)
	c.zset = maps.Clone(v.zset)
	return &c
}

// Redis is the in-memory server. Its clock only moves through SetTime.
type Redis struct {
	now  int64 // µs since the epoch
	data map[string]*value
	log  []string
	eng  *engine // shared with clones: building a Lua state is the slow part
}

// engine is one Lua state and the server its redis.call currently reaches.
type engine struct {
	L   *lua.LState
	cur *Redis
}

// New returns an empty server whose clock reads now (µs).
func New(now int64) *Redis {
	return &Redis{now: now, data: map[string]*value{}}
}

// SetTime moves the clock (µs since the epoch) and expires keys.
func (r *Redis) SetTime(now int64) { r.now = now }

// Now reads the clock.
func (r *Redis) Now() int64 { return r.now }

// Commands returns the commands the last Eval sent, one line each.
func (r *Redis) Commands() []string { return r.log }

// Snapshot is a deep copy of every live key, TTL included.
type Snapshot map[string]value

// Snapshot copies the live state.
func (r *Redis) Snapshot() Snapshot {
	s := Snapshot{}
	for k := range r.data {
		if v := r.get(k); v != nil {
			s[k] = *v.clone()
		}
	}
	return s
}

// Equal reports whether two snapshots hold the same keys, values and TTLs.
func (s Snapshot) Equal(o Snapshot) bool { return s.String() == o.String() }

func (s Snapshot) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := s[k]
		fmt.Fprintf(&b, "%s %s exp=%d", k, v.kind, v.expireAt)
		switch v.kind {
		case "string":
			fmt.Fprintf(&b, " %q", v.str)
		case "hash":
			fmt.Fprintf(&b, " %v", sortedMap(v.hash))
		case "zset":
			fmt.Fprintf(&b, " %v", sortedMap(v.zset))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sortedMap[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

// PTTL answers like Redis: ms left, -1 without a TTL, -2 without the key.
func (r *Redis) PTTL(key string) int64 {
	v := r.get(key)
	switch {
	case v == nil:
		return -2
	case v.expireAt == 0:
		return -1
	}
	return (v.expireAt - r.now + 999) / 1000
}

// Set stores a plain string, to put a key of the wrong type in a script's way.
func (r *Redis) Set(key, val string) { r.data[key] = &value{kind: "string", str: val} }

// Put creates a preset key: foreign data or crafted state. A list keeps no
// elements here: scripts never read one, they only meet its type.
func (r *Redis) Put(p scenario.Preset) {
	v := &value{kind: p.Type, hash: map[string]string{}, zset: map[string]float64{}}
	switch p.Type {
	case "string":
		v.str = p.Vals[0]
	case "hash":
		for i := 0; i+1 < len(p.Vals); i += 2 {
			v.hash[p.Vals[i]] = p.Vals[i+1]
		}
	case "zset":
		for i := 0; i+1 < len(p.Vals); i += 2 {
			s, err := strconv.ParseFloat(p.Vals[i], 64)
			if err != nil {
				panic("preset " + p.Key + ": score " + p.Vals[i])
			}
			v.zset[p.Vals[i+1]] = s
		}
	}
	if p.TTL > 0 {
		v.expireAt = r.now + p.TTL*1000
	}
	r.data[p.Key] = v
}

// get returns the live value of key, dropping it when it has expired.
func (r *Redis) get(key string) *value {
	v := r.data[key]
	if v != nil && v.expireAt != 0 && v.expireAt <= r.now {
		delete(r.data, key)
		return nil
	}
	return v
}

// Source reads a bundled script from lua/.
func Source(name string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "lua", name+".lua"))
	return string(b), err
}

// Eval runs a script the way EVAL does and returns the reply converted as
// Redis converts it: numbers truncate to int64, tables become []any up to the
// first nil, true becomes 1, false and nil become nil, and {err=...} becomes
// an ErrorReply.
func (r *Redis) Eval(src string, keys, args []string) (any, error) {
	r.log = nil
	L := r.state()
	r.eng.cur = r
	L.SetGlobal("KEYS", strings2table(L, keys))
	L.SetGlobal("ARGV", strings2table(L, args))
	L.SetTop(0)
	proto, err := compile(src)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	L.Push(L.NewFunctionFromProto(proto))
	if err := L.PCall(0, 1, nil); err != nil {
		if apiErr, ok := err.(*lua.ApiError); ok {
			if t, ok := apiErr.Object.(*lua.LTable); ok {
				if e, ok := L.GetField(t, "err").(lua.LString); ok {
					return nil, ErrorReply(e)
				}
			}
		}
		return nil, ErrorReply("ERR " + err.Error())
	}
	reply := toReply(L, L.Get(-1))
	if e, ok := reply.(error); ok {
		return nil, e
	}
	return reply, nil
}

var protos sync.Map // script source -> *lua.FunctionProto

// compile parses a script once; every Eval of it then only builds a state.
func compile(src string) (*lua.FunctionProto, error) {
	if p, ok := protos.Load(src); ok {
		return p.(*lua.FunctionProto), nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), "script")
	if err != nil {
		return nil, err
	}
	p, err := lua.Compile(chunk, "script")
	if err != nil {
		return nil, err
	}
	protos.Store(src, p)
	return p, nil
}

// state builds the Lua state once per server: only Redis's libraries, no
// way to load code, and globals read-only as in Redis 7.
func (r *Redis) state() *lua.LState {
	if r.eng != nil {
		return r.eng.L
	}
	r.eng = &engine{}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "module", "require"} {
		L.SetGlobal(name, lua.LNil)
	}
	L.SetGlobal("KEYS", L.NewTable())
	L.SetGlobal("ARGV", L.NewTable())
	L.SetGlobal("redis", r.eng.module(L))
	mt := L.NewTable()
	L.SetField(mt, "__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	L.SetField(mt, "__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table: global %s", L.CheckAny(2).String())
		return 0
	}))
	L.SetMetatable(L.G.Global, mt)
	r.eng.L = L
	return L
}

func strings2table(L *lua.LState, ss []string) *lua.LTable {
	t := L.NewTable()
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

func toReply(L *lua.LState, v lua.LValue) any {
	switch v := v.(type) {
	case lua.LNumber:
		return int64(v)
	case lua.LString:
		return string(v)
	case lua.LBool:
		if v {
			return int64(1)
		}
		return nil
	case *lua.LTable:
		if e, ok := L.GetField(v, "err").(lua.LString); ok {
			return ErrorReply(e)
		}
		if s, ok := L.GetField(v, "ok").(lua.LString); ok {
			return string(s)
		}
		var out []any
		for i := 1; ; i++ {
			el := v.RawGetInt(i)
			if el == lua.LNil {
				return out
			}
			out = append(out, toReply(L, el))
		}
	}
	return nil
}

func (e *engine) module(L *lua.LState) *lua.LTable {
	m := L.NewTable()
	L.SetField(m, "call", L.NewFunction(func(L *lua.LState) int { return e.cur.call(L, true) }))
	L.SetField(m, "pcall", L.NewFunction(func(L *lua.LState) int { return e.cur.call(L, false) }))
	L.SetField(m, "error_reply", L.NewFunction(func(L *lua.LState) int {
		t := L.NewTable()
		L.SetField(t, "err", lua.LString(L.CheckString(1)))
		L.Push(t)
		return 1
	}))
	L.SetField(m, "status_reply", L.NewFunction(func(L *lua.LState) int {
		t := L.NewTable()
		L.SetField(t, "ok", lua.LString(L.CheckString(1)))
		L.Push(t)
		return 1
	}))
	return m
}

// call runs one redis.call (raise=true) or redis.pcall.
func (r *Redis) call(L *lua.LState, raise bool) int {
	n := L.GetTop()
	argv := make([]string, n)
	for i := 1; i <= n; i++ {
		s, ok := L.Get(i).(lua.LString)
		if !ok {
			L.RaiseError("luatest: argument %d of redis.call is a %s, not a string: format numbers with string.format('%%d', n)", i, L.Get(i).Type())
		}
		argv[i-1] = string(s)
	}
	r.log = append(r.log, strings.Join(argv, " "))
	reply, err := r.exec(argv)
	if err != nil {
		t := L.NewTable()
		L.SetField(t, "err", lua.LString(err.Error()))
		if raise {
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	L.Push(toLua(L, reply))
	return 1
}

// toLua converts a command's reply as Redis does for scripts: nil bulk
// strings become false.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LFalse
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.NewTable()
		for _, el := range v {
			t.Append(toLua(L, el))
		}
		return t
	}
	panic(fmt.Sprintf("luatest: reply %T", v))
}

// scriptNames lists the scripts in lua/, without .lua.
func scriptNames() ([]string, error) {
	_, file, _, _ := runtime.Caller(0)
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "lua", "*.lua"))
	var out []string
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".lua"))
	}
	return out, err
}

// Clone returns an independent copy of the server, clock included. It
// shares the Lua state, so a clone and its original must not Eval at once.
func (r *Redis) Clone() *Redis {
	c := New(r.now)
	c.eng = r.eng
	for k, v := range r.data {
		c.data[k] = v.clone()
	}
	return c
}

// Content is a key's type and value on one line, fields and members in
// order ("" when the key does not exist): what a real server holding the
// same key reads as, so tiers can compare state.
func (r *Redis) Content(key string) string {
	v := r.get(key)
	if v == nil {
		return ""
	}
	switch v.kind {
	case "string":
		return "string " + v.str
	case "hash":
		return "hash " + sortedMap(v.hash)
	case "zset":
		parts := make([]string, 0, len(v.zset))
		for m, s := range v.zset {
			parts = append(parts, m+"="+strconv.FormatFloat(s, 'f', -1, 64))
		}
		sort.Strings(parts)
		return "zset " + strings.Join(parts, " ")
	}
	return v.kind
}
