package gen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// Check is one lint check: the name a "-- luagen:ignore NAME" comment uses,
// its severity and one line saying what it finds. The table below is the
// only list of checks; gen's package doc, luagen -help and the README are
// checked against it.
type Check struct {
	Name     string
	Severity Severity
	Doc      string
}

// Severity says what a finding does to Generate.
type Severity string

// An Error is a finding where the script provably breaks on Redis, or
// answers there otherwise than in gopher-lua (and so miniredis and the
// tests): Generate refuses the script. A Warning is advice about a script
// that works: Generate reports it and goes on, unless Options.Strict.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// check is a Check and how it runs: node sees every statement and
// expression in the one walk; file runs once, after it.
type check struct {
	Check
	node func(l *linter, w *walker, n any)
	file func(l *linter)
}

var checks = []check{
	{Check: Check{"global", Error, "assignment to a global, or a function declared without local: Redis 7 refuses it"}, node: lintGlobal},
	{Check: Check{"undefined", Error, "a read of a global Redis's Lua does not have (a typo, or a local declared later): Redis raises an error, gopher-lua reads nil"}, node: lintUndefined, file: reportUndefined},
	{Check: Check{"goto", Error, "goto or a label: Lua 5.2; Redis runs Lua 5.1 and cannot parse it"}, node: lintGoto},
	{Check: Check{"shebang", Error, "a #! line: miniredis, gopher-lua and Redis before 7.0 cannot parse it"}, file: lintShebang},
	{Check: Check{"no-writes", Error, "a write command in a script with @flags no-writes: EVALSHA_RO and replicas refuse it"}, node: lintNoWrites},
	{Check: Check{"library", Error, "os, io, debug, package, require, module, load, loadstring, dofile, loadfile: Redis's Lua has none of them"}, node: lintLibrary},
	{Check: Check{"multi-assign", Error, "a, b = b, a: Lua 5.1 evaluates every value first, gopher-lua (miniredis) assigns as it goes"}, node: lintMultiAssign},
	{Check: Check{"key-arg", Warning, "a redis.call/pcall key argument not taken from KEYS (KEYS[i] or a local bound from it): a cluster cannot route it"}, node: lintKeyArg},
	{Check: Check{"keys-scan", Warning, "the KEYS or SCAN command: walks the keyspace, blocks Redis, misses keys on a cluster"}, node: lintKeysScan},
	{Check: Check{"number-string", Warning, "tostring, .., %s or a %g without precision on a number expression: Redis prints %.14g, gopher-lua the shortest form"}, node: lintNumberString},
	{Check: Check{"number-arg", Warning, "a computed number passed to redis.call/pcall: Redis formats it, not always as an integer"}, node: lintNumberArg},
	{Check: Check{"error-code", Warning, "redis.error_reply('CODE ...') with a CODE the header does not declare with @error"}, node: lintErrorCode},
}

// Checks lists every lint check in the order luagen documents them.
func Checks() []Check {
	out := make([]Check, len(checks))
	for i, c := range checks {
		out[i] = c.Check
	}
	return out
}

// ChecksText is the list of checks as -help and the package doc print it:
// one line each, the name padded to a column.
func ChecksText(indent string) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%s%-14s %-8s %s\n", indent, c.Name, c.Severity, c.Doc)
	}
	return b.String()
}

func knownCheck(name string) bool { return severities[name] != "" }

// severities is each check's severity, from the table (a map built in init,
// since the table's functions report through it).
var severities = map[string]Severity{}

func init() {
	for _, c := range checks {
		severities[c.Name] = c.Severity
	}
}

// Names Redis's Lua does not have, or that reach outside the sandbox.
// coroutine is left out on purpose: Lua 5.1's base library opens it and
// Redis ships it.
var missingLibs = map[string]bool{
	"os": true, "io": true, "debug": true, "package": true, "require": true,
	"module": true, "load": true, "loadstring": true, "dofile": true, "loadfile": true,
}

// luaGlobals are the globals a Redis script may read: Redis's own, Lua
// 5.1's base library, and the libraries Redis loads.
var luaGlobals = map[string]bool{
	"redis": true, "KEYS": true, "ARGV": true,
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "struct": true, "bit": true, "coroutine": true,
	"_G": true, "_VERSION": true, "assert": true, "error": true, "getmetatable": true, "setmetatable": true,
	"ipairs": true, "pairs": true, "next": true, "pcall": true, "xpcall": true, "rawequal": true, "rawget": true,
	"rawset": true, "select": true, "tonumber": true, "tostring": true, "type": true, "unpack": true,
	"collectgarbage": true, "gcinfo": true, "getfenv": true, "setfenv": true, "newproxy": true, "print": true,
}

// keyPos is, per command, the redis.call argument position (1 = the
// command name) of its first key; 0 means the command takes no key. Every
// other command is taken to have its key at position 2.
var keyPos = map[string]int{
	"TIME": 0, "PING": 0, "ECHO": 0, "PUBLISH": 0, "SPUBLISH": 0, "INFO": 0,
	"DBSIZE": 0, "LASTSAVE": 0, "ROLE": 0, "SELECT": 0, "SWAPDB": 0,
	"FLUSHDB": 0, "FLUSHALL": 0, "RANDOMKEY": 0, "SCRIPT": 0, "FUNCTION": 0,
	"CLIENT": 0, "CONFIG": 0, "CLUSTER": 0, "COMMAND": 0, "WAIT": 0,
	"EVAL": 0, "EVALSHA": 0, "EVAL_RO": 0, "EVALSHA_RO": 0, "FCALL": 0, "FCALL_RO": 0,
	"OBJECT": 3, "MEMORY": 3, "XINFO": 3, "XGROUP": 3, "BITOP": 3,
}

// writeCommands are the commands Redis flags "write": a no-writes script
// that calls one fails under EVALSHA_RO and on a replica.
var writeCommands = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`APPEND BITFIELD BITOP BLMOVE BLMPOP BLPOP BRPOP BRPOPLPUSH BZMPOP
		BZPOPMAX BZPOPMIN COPY DECR DECRBY DEL EXPIRE EXPIREAT FLUSHALL FLUSHDB GEOADD
		GEORADIUS GEORADIUSBYMEMBER GEOSEARCHSTORE GETDEL GETEX GETSET HDEL HINCRBY
		HINCRBYFLOAT HMSET HSET HSETNX INCR INCRBY INCRBYFLOAT LINSERT LMOVE LMPOP LPOP
		LPUSH LPUSHX LREM LSET LTRIM MIGRATE MOVE MSET MSETNX PERSIST PEXPIRE PEXPIREAT
		PFADD PFDEBUG PFMERGE PSETEX RENAME RENAMENX RESTORE RPOP RPOPLPUSH RPUSH RPUSHX
		SADD SDIFFSTORE SET SETBIT SETEX SETNX SETRANGE SINTERSTORE SMOVE SORT SPOP SREM
		SUNIONSTORE SWAPDB UNLINK XACK XADD XAUTOCLAIM XCLAIM XDEL XGROUP XREADGROUP
		XSETID XTRIM ZADD ZDIFFSTORE ZINCRBY ZINTERSTORE ZMPOP ZPOPMAX ZPOPMIN
		ZRANGESTORE ZREM ZREMRANGEBYLEX ZREMRANGEBYRANK ZREMRANGEBYSCORE ZUNIONSTORE`) {
		writeCommands[c] = true
	}
}

type linter struct {
	s      *Script
	r      *reporter
	ignore map[int]map[string]bool
	// Globals the script assigns (reported by "global") and reads of
	// names that are neither local nor Redis's, reported after the walk
	// unless the script assigns them.
	assigned map[string]bool
	reads    []*ast.IdentExpr
}

func newLinter(s *Script, src []byte, r *reporter) *linter {
	l := &linter{s: s, r: r, ignore: map[int]map[string]bool{}, assigned: map[string]bool{}}
	for _, c := range luaComments(src) {
		body := strings.TrimSpace(c.text)
		rest, ok := strings.CutPrefix(body, "luagen:ignore")
		if !ok {
			continue
		}
		if l.ignore[c.line] == nil {
			l.ignore[c.line] = map[string]bool{}
		}
		names := strings.FieldsFunc(rest, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' })
		if len(names) == 0 {
			r.errorf(c.line, "luagen:ignore names no check; want one of %s", checkList())
		}
		for _, name := range names {
			if !knownCheck(name) {
				r.errorf(c.line, "luagen:ignore %s: no such check; want one of %s", name, checkList())
				continue
			}
			l.ignore[c.line][name] = true
		}
	}
	return l
}

func checkList() string {
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

func (l *linter) report(line int, check, format string, args ...any) {
	if l.ignore[line][check] {
		return
	}
	if severities[check] == Warning {
		l.r.warnf(line, format+" ("+check+")", args...)
		return
	}
	l.r.errorf(line, format+" ("+check+")", args...)
}

func (l *linter) visit(w *walker, n any) {
	for _, c := range checks {
		if c.node != nil {
			c.node(l, w, n)
		}
	}
}

func (l *linter) finish() {
	for _, c := range checks {
		if c.file != nil {
			c.file(l)
		}
	}
}

func lintGlobal(l *linter, w *walker, n any) {
	switch st := n.(type) {
	case *ast.AssignStmt:
		for _, e := range st.Lhs {
			if id, ok := e.(*ast.IdentExpr); ok && w.lookup(id.Value) == nil {
				l.assigned[id.Value] = true
				l.report(id.Line(), "global", "assignment to global %s: Redis 7 rejects it; declare it local", id.Value)
			}
		}
	case *ast.FuncDefStmt:
		if id, ok := st.Name.Func.(*ast.IdentExpr); ok && st.Name.Receiver == nil && w.lookup(id.Value) == nil {
			l.assigned[id.Value] = true
			l.report(st.Line(), "global", "function %s is global: Redis 7 rejects it; write local function %s", id.Value, id.Value)
		}
	}
}

func lintUndefined(l *linter, w *walker, n any) {
	if id, ok := n.(*ast.IdentExpr); ok && w.lookup(id.Value) == nil && !luaGlobals[id.Value] && !missingLibs[id.Value] {
		l.reads = append(l.reads, id)
	}
}

func reportUndefined(l *linter) {
	for _, id := range l.reads {
		if !l.assigned[id.Value] {
			l.report(id.Line(), "undefined", "%s is not defined: Redis raises \"Script attempted to access nonexistent global variable\"; declare it local before this line, or fix the name", id.Value)
		}
	}
}

func lintGoto(l *linter, _ *walker, n any) {
	switch st := n.(type) {
	case *ast.GotoStmt:
		l.report(st.Line(), "goto", "goto is Lua 5.2; Redis runs Lua 5.1")
	case *ast.LabelStmt:
		l.report(st.Line(), "goto", "label ::%s:: is Lua 5.2; Redis runs Lua 5.1", st.Name)
	}
}

// lintShebang flags every #! line. Redis 7 reads it (it changes the
// script's defaults), but miniredis, gopher-lua and Redis 6.2 reject the
// file as a syntax error, and luagen sends the file byte for byte so its
// SHA1 is the file's. The #! line cannot carry a comment, so the ignore
// may sit on any line of the file.
func lintShebang(l *linter) {
	if !l.s.Shebang {
		return
	}
	for _, checks := range l.ignore {
		if checks["shebang"] {
			return
		}
	}
	how := "luagen already runs a @flags no-writes script with EVALSHA_RO"
	if !l.s.HasFlag("no-writes") {
		how = "and without flags=no-writes Redis 7 treats the script as one that writes; if it only reads, declare @flags no-writes"
	}
	l.report(1, "shebang", "#! line: miniredis, gopher-lua and Redis before 7.0 cannot parse it (%s); drop it, or keep it with -- luagen:ignore shebang if you run only on Redis 7 or later", how)
}

// redisCall returns the command of redis.call/redis.pcall('CMD', ...) in
// upper case, and the function's name, or "" when e is not such a call
// with a literal command.
func redisCall(n any) (e *ast.FuncCallExpr, cmd, fn string) {
	e, ok := n.(*ast.FuncCallExpr)
	if !ok || len(e.Args) == 0 {
		return nil, "", ""
	}
	g, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		return nil, "", ""
	}
	obj, ok1 := g.Object.(*ast.IdentExpr)
	name, ok2 := g.Key.(*ast.StringExpr)
	if !ok1 || !ok2 || obj.Value != "redis" || (name.Value != "call" && name.Value != "pcall") {
		return nil, "", ""
	}
	lit, ok := e.Args[0].(*ast.StringExpr)
	if !ok {
		return e, "", name.Value
	}
	return e, strings.ToUpper(lit.Value), name.Value
}

func lintKeyArg(l *linter, w *walker, n any) {
	e, cmd, _ := redisCall(n)
	if cmd == "" || cmd == "KEYS" || cmd == "SCAN" {
		return
	}
	pos, listed := keyPos[cmd]
	if !listed {
		pos = 2
	}
	if pos == 0 || len(e.Args) < pos {
		return
	}
	if arg := e.Args[pos-1]; !w.fromKeys(arg) {
		l.report(arg.Line(), "key-arg", "key of %s does not come from KEYS: pass every key in KEYS so the cluster can route it", cmd)
	}
}

func lintKeysScan(l *linter, _ *walker, n any) {
	e, cmd, fn := redisCall(n)
	if cmd == "KEYS" || cmd == "SCAN" {
		l.report(e.Line(), "keys-scan", "redis.%s('%s'): walks the keyspace, which blocks Redis and misses keys on a cluster", fn, e.Args[0].(*ast.StringExpr).Value)
	}
}

func lintNoWrites(l *linter, _ *walker, n any) {
	e, cmd, fn := redisCall(n)
	if writeCommands[cmd] && l.s.HasFlag("no-writes") {
		l.report(e.Line(), "no-writes", "redis.%s('%s') writes, but the header says @flags no-writes: EVALSHA_RO and replicas refuse it; drop no-writes or the write", fn, e.Args[0].(*ast.StringExpr).Value)
	}
}

// formatAdvice is what number-string recommends. Measured on Redis 7.0
// against gopher-lua over 4 142 values: a format with an explicit
// precision (%.17g, %.3f), and %e and %f, print the same in both for every
// finite number; %d truncates a fraction (7.5 prints 7), so it is advice
// for integers only.
const formatAdvice = "Redis's Lua prints it with %%.14g (0.1+0.2 gives 0.3, 1e15 gives 1e+15), gopher-lua with Go's shortest form; " +
	"use string.format('%%d', n) for an integer, or a precision such as '%%.17g' for a fraction"

func lintNumberString(l *linter, w *walker, n any) {
	switch e := n.(type) {
	case *ast.StringConcatOpExpr:
		for _, side := range []ast.Expr{e.Lhs, e.Rhs} {
			if numeric(side) {
				l.report(side.Line(), "number-string", "number joined with ..: "+formatAdvice)
			}
		}
	case *ast.FuncCallExpr:
		if id, ok := e.Func.(*ast.IdentExpr); ok && id.Value == "tostring" && w.lookup("tostring") == nil {
			if len(e.Args) == 1 && numeric(e.Args[0]) {
				l.report(e.Line(), "number-string", "tostring of a number: "+formatAdvice)
			}
			return
		}
		if !isLibCall(w, e, "string", "format") || len(e.Args) == 0 {
			return
		}
		format, ok := e.Args[0].(*ast.StringExpr)
		if !ok {
			return
		}
		for i, d := range formatDirectives(format.Value) {
			if i+1 < len(e.Args) && d.printsLikeTostring() && numeric(e.Args[i+1]) {
				l.report(e.Args[i+1].Line(), "number-string", "string.format %%%c of a number: "+formatAdvice, d.verb)
			}
		}
	}
}

// directive is one % conversion of a string.format format.
type directive struct {
	verb      byte
	precision bool // written with .N
}

// printsLikeTostring reports a conversion whose text differs between
// Redis's Lua and gopher-lua for some finite numbers: %s and %q print a
// number as tostring does, and %g without a precision is Go's shortest
// form in gopher-lua but C's six digits in Redis.
func (d directive) printsLikeTostring() bool {
	switch d.verb {
	case 's', 'q':
		return true
	case 'g', 'G':
		return !d.precision
	}
	return false
}

// formatDirectives returns each % directive of a string.format format, in
// argument order.
func formatDirectives(f string) []directive {
	var ds []directive
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		d := directive{}
		for i < len(f) && strings.IndexByte("-+ #0123456789.", f[i]) >= 0 {
			d.precision = d.precision || f[i] == '.'
			i++
		}
		if i < len(f) && f[i] != '%' {
			d.verb = f[i]
			ds = append(ds, d)
		}
	}
	return ds
}

func lintNumberArg(l *linter, _ *walker, n any) {
	e, _, fn := redisCall(n)
	if e == nil {
		return
	}
	for i, a := range e.Args[1:] {
		if numeric(a) {
			l.report(a.Line(), "number-arg", "argument %d of redis.%s is a computed number: Redis formats it itself (7.0 sends 0.1 as 0.10000000000000001, 7.2.0-7.2.4 send 200000000 as 2e+8); pass string.format('%%d', n)", i+2, fn)
		}
	}
}

func lintErrorCode(l *linter, w *walker, n any) {
	e, ok := n.(*ast.FuncCallExpr)
	if !ok || len(e.Args) != 1 || !isLibCall(w, e, "redis", "error_reply") {
		return
	}
	text, ok := leadingString(e.Args[0])
	if !ok {
		return
	}
	code, _, _ := strings.Cut(text, " ")
	if code == "ERR" || !codeRE.MatchString(code) {
		return
	}
	for _, c := range l.s.Errors {
		if c.Code == code {
			return
		}
	}
	l.report(e.Line(), "error-code", "error reply %s is not declared: add \"--- @error %s <when>\" so Go callers get Err%s and other stacks read the code", code, code, strings.TrimPrefix(errName(code), "Err"))
}

// leadingString returns the literal text an expression starts with:
// 'X', 'X' .. y, or string.format('X', ...).
func leadingString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.StringExpr:
		return e.Value, true
	case *ast.StringConcatOpExpr:
		return leadingString(e.Lhs)
	case *ast.FuncCallExpr:
		if g, ok := e.Func.(*ast.AttrGetExpr); ok && len(e.Args) > 0 {
			obj, ok1 := g.Object.(*ast.IdentExpr)
			key, ok2 := g.Key.(*ast.StringExpr)
			if ok1 && ok2 && obj.Value == "string" && key.Value == "format" {
				return leadingString(e.Args[0])
			}
		}
	}
	return "", false
}

// isLibCall reports whether e calls lib.fn with lib not shadowed by a local.
func isLibCall(w *walker, e *ast.FuncCallExpr, lib, fn string) bool {
	g, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	obj, ok1 := g.Object.(*ast.IdentExpr)
	key, ok2 := g.Key.(*ast.StringExpr)
	return ok1 && ok2 && obj.Value == lib && key.Value == fn && w.lookup(lib) == nil
}

func lintLibrary(l *linter, w *walker, n any) {
	if id, ok := n.(*ast.IdentExpr); ok && missingLibs[id.Value] && w.lookup(id.Value) == nil {
		l.report(id.Line(), "library", "%s is not available in Redis's Lua", id.Value)
	}
}

// lintMultiAssign flags a, b = b, a. Lua 5.1 evaluates every value before
// it assigns; gopher-lua (and so miniredis and the gopher-lua test tier)
// assigns each target as soon as its value is known, so a later value that
// reads an earlier target sees the new value and the tiers disagree.
func lintMultiAssign(l *linter, _ *walker, n any) {
	st, ok := n.(*ast.AssignStmt)
	if !ok {
		return
	}
	for j := 1; j < len(st.Rhs); j++ {
		for _, target := range st.Lhs[:min(j, len(st.Lhs))] {
			id, ok := target.(*ast.IdentExpr)
			if ok && mentions(st.Rhs[j], id.Value) {
				l.report(st.Rhs[j].Line(), "multi-assign", "value %d of this assignment reads %s, which it assigns first: gopher-lua (miniredis) sees the new %s, Redis the old; split the statement", j+1, id.Value, id.Value)
				return
			}
		}
	}
}

// numeric reports whether e is certainly a number that may not print as an
// integer: arithmetic, a number literal that is not a small integer,
// math.*(...) or tonumber(...). A plain variable is not judged: being
// pragmatic beats flagging every tostring(x).
func numeric(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.ArithmeticOpExpr:
		return true
	case *ast.UnaryMinusOpExpr:
		return numeric(e.Expr)
	case *ast.NumberExpr:
		n, err := strconv.ParseInt(e.Value, 0, 64)
		return err != nil || n > 1e14 || n < -1e14
	case *ast.FuncCallExpr:
		switch f := e.Func.(type) {
		case *ast.IdentExpr:
			return f.Value == "tonumber"
		case *ast.AttrGetExpr:
			id, ok := f.Object.(*ast.IdentExpr)
			return ok && id.Value == "math"
		}
	}
	return false
}
