package gen

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// The lint checks, by the name a "-- luagen:ignore NAME" comment uses.
const (
	checkGlobal       = "global"        // assignment to a global, function without local
	checkGoto         = "goto"          // goto or a label: Redis's Lua 5.1 has neither
	checkShebang      = "shebang"       // #! line on a script without @flags no-writes
	checkKeyArg       = "key-arg"       // redis.call key argument not taken from KEYS
	checkKeysScan     = "keys-scan"     // the KEYS or SCAN command
	checkNumberString = "number-string" // tostring or .. on a number expression
	checkLibrary      = "library"       // os, io, debug, require, load... Redis lacks them
	checkMultiAssign  = "multi-assign"  // a, b = b, a: gopher-lua assigns as it goes
)

// Names Redis's Lua does not have, or that reach outside the sandbox.
// coroutine is left out on purpose: Lua 5.1's base library opens it and
// Redis ships it.
var missingLibs = map[string]bool{
	"os": true, "io": true, "debug": true, "package": true, "require": true,
	"module": true, "load": true, "loadstring": true, "dofile": true, "loadfile": true,
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

var ignoreRE = regexp.MustCompile(`--\s*luagen:ignore\s+([a-z][a-z, -]*)`)

// ignored returns, per line, the checks a "-- luagen:ignore" comment turns
// off. Comments are not in gopher-lua's ast, so this reads the raw lines.
func ignored(lines []string) map[int]map[string]bool {
	m := map[int]map[string]bool{}
	for i, l := range lines {
		sub := ignoreRE.FindStringSubmatch(l)
		if sub == nil {
			continue
		}
		m[i+1] = map[string]bool{}
		for _, name := range strings.FieldsFunc(sub[1], func(c rune) bool { return c == ',' || c == ' ' }) {
			m[i+1][name] = true
		}
	}
	return m
}

type linter struct {
	r      *reporter
	ignore map[int]map[string]bool
	scope  *scope
}

type scope struct {
	parent *scope
	vars   map[string]*local
}

type local struct {
	fromKeys bool // bound from KEYS[i], so it may name a key
}

func (l *linter) report(line int, check, format string, args ...any) {
	if l.ignore[line][check] {
		return
	}
	l.r.errorf(line, format+" ("+check+")", args...)
}

func (l *linter) push() { l.scope = &scope{parent: l.scope, vars: map[string]*local{}} }
func (l *linter) pop()  { l.scope = l.scope.parent }

func (l *linter) declare(name string, fromKeys bool) {
	l.scope.vars[name] = &local{fromKeys: fromKeys}
}

func (l *linter) lookup(name string) *local {
	for s := l.scope; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	return nil
}

// lint runs every check on a parsed script.
func lint(s *Script, chunk []ast.Stmt, lines []string, r *reporter) {
	l := &linter{r: r, ignore: ignored(lines)}
	// Redis rejects anything unknown on the #! line, so the ignore comment
	// for this check may sit on any line of the file.
	anywhere := false
	for _, checks := range l.ignore {
		anywhere = anywhere || checks[checkShebang]
	}
	if s.Shebang && !s.HasFlag("no-writes") && !anywhere {
		l.report(1, checkShebang, "#! line on a script that writes: it changes Redis's defaults and miniredis cannot parse it; declare @flags no-writes or drop it")
	}
	l.push()
	l.block(chunk)
}

func (l *linter) block(stmts []ast.Stmt) {
	l.push()
	defer l.pop()
	for _, st := range stmts {
		l.stmt(st)
	}
}

func (l *linter) stmt(st ast.Stmt) {
	switch st := st.(type) {
	case *ast.LocalAssignStmt:
		if len(st.Names) == 1 && len(st.Exprs) == 1 {
			if _, ok := st.Exprs[0].(*ast.FunctionExpr); ok {
				l.declare(st.Names[0], false) // local function f: f is visible in its body
			}
		}
		for _, e := range st.Exprs {
			l.expr(e)
		}
		for j, name := range st.Names {
			fromKeys := j < len(st.Exprs) && l.fromKeys(st.Exprs[j])
			l.declare(name, fromKeys)
		}
	case *ast.AssignStmt:
		for _, e := range st.Lhs {
			if id, ok := e.(*ast.IdentExpr); ok {
				if l.lookup(id.Value) == nil {
					l.report(id.Line(), checkGlobal, "assignment to global %s: Redis 7 rejects it; declare it local", id.Value)
				}
				continue
			}
			l.expr(e)
		}
		for _, e := range st.Rhs {
			l.expr(e)
		}
		l.multiAssign(st)
	case *ast.FuncDefStmt:
		if id, ok := st.Name.Func.(*ast.IdentExpr); ok && st.Name.Receiver == nil {
			if l.lookup(id.Value) == nil {
				l.report(st.Line(), checkGlobal, "function %s is global: Redis 7 rejects it; write local function %s", id.Value, id.Value)
			}
		} else {
			if st.Name.Func != nil {
				l.expr(st.Name.Func)
			}
			if st.Name.Receiver != nil {
				l.expr(st.Name.Receiver)
			}
		}
		l.function(st.Func, st.Name.Method != "")
	case *ast.FuncCallStmt:
		l.expr(st.Expr)
	case *ast.DoBlockStmt:
		l.block(st.Stmts)
	case *ast.WhileStmt:
		l.expr(st.Condition)
		l.block(st.Stmts)
	case *ast.RepeatStmt:
		// The condition sees the body's locals.
		l.push()
		for _, s := range st.Stmts {
			l.stmt(s)
		}
		l.expr(st.Condition)
		l.pop()
	case *ast.IfStmt:
		l.expr(st.Condition)
		l.block(st.Then)
		l.block(st.Else)
	case *ast.NumberForStmt:
		l.expr(st.Init)
		l.expr(st.Limit)
		if st.Step != nil {
			l.expr(st.Step)
		}
		l.push()
		l.declare(st.Name, false)
		l.block(st.Stmts)
		l.pop()
	case *ast.GenericForStmt:
		overKeys := false
		for _, e := range st.Exprs {
			l.expr(e)
			overKeys = overKeys || mentions(e, "KEYS")
		}
		l.push()
		for _, name := range st.Names {
			l.declare(name, overKeys) // for _, key in ipairs(KEYS)
		}
		l.block(st.Stmts)
		l.pop()
	case *ast.ReturnStmt:
		for _, e := range st.Exprs {
			l.expr(e)
		}
	case *ast.GotoStmt:
		l.report(st.Line(), checkGoto, "goto is Lua 5.2; Redis runs Lua 5.1")
	case *ast.LabelStmt:
		l.report(st.Line(), checkGoto, "label ::%s:: is Lua 5.2; Redis runs Lua 5.1", st.Name)
	}
}

func (l *linter) function(f *ast.FunctionExpr, method bool) {
	l.push()
	if method {
		l.declare("self", false)
	}
	for _, p := range f.ParList.Names {
		l.declare(p, false)
	}
	l.block(f.Stmts)
	l.pop()
}

func (l *linter) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if missingLibs[e.Value] && l.lookup(e.Value) == nil {
			l.report(e.Line(), checkLibrary, "%s is not available in Redis's Lua", e.Value)
		}
	case *ast.AttrGetExpr:
		l.expr(e.Object)
		l.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				l.expr(f.Key)
			}
			l.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		l.call(e)
		if e.Func != nil {
			l.expr(e.Func)
		}
		if e.Receiver != nil {
			l.expr(e.Receiver)
		}
		for _, a := range e.Args {
			l.expr(a)
		}
	case *ast.LogicalOpExpr:
		l.expr(e.Lhs)
		l.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		l.expr(e.Lhs)
		l.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		for _, side := range []ast.Expr{e.Lhs, e.Rhs} {
			if numeric(side) {
				l.report(side.Line(), checkNumberString, "number joined with ..: Redis's Lua prints it with %%.14g (1e15 becomes 1e+15); use string.format('%%d', n)")
			}
		}
		l.expr(e.Lhs)
		l.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		l.expr(e.Lhs)
		l.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		l.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		l.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		l.expr(e.Expr)
	case *ast.FunctionExpr:
		l.function(e, false)
	}
}

// call checks redis.call/redis.pcall and tostring.
func (l *linter) call(e *ast.FuncCallExpr) {
	if id, ok := e.Func.(*ast.IdentExpr); ok && id.Value == "tostring" && l.lookup("tostring") == nil {
		if len(e.Args) == 1 && numeric(e.Args[0]) {
			l.report(e.Line(), checkNumberString, "tostring of a number: Redis's Lua prints it with %%.14g (1e15 becomes 1e+15); use string.format('%%d', n)")
		}
		return
	}
	g, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		return
	}
	obj, ok1 := g.Object.(*ast.IdentExpr)
	fn, ok2 := g.Key.(*ast.StringExpr)
	if !ok1 || !ok2 || obj.Value != "redis" || (fn.Value != "call" && fn.Value != "pcall") || len(e.Args) == 0 {
		return
	}
	cmdExpr, ok := e.Args[0].(*ast.StringExpr)
	if !ok {
		return
	}
	cmd := strings.ToUpper(cmdExpr.Value)
	if cmd == "KEYS" || cmd == "SCAN" {
		l.report(e.Line(), checkKeysScan, "redis.%s('%s'): walks the keyspace, which blocks Redis and misses keys on a cluster", fn.Value, cmdExpr.Value)
		return
	}
	pos, listed := keyPos[cmd]
	if !listed {
		pos = 2
	}
	if pos == 0 || len(e.Args) < pos {
		return
	}
	if arg := e.Args[pos-1]; !l.fromKeys(arg) {
		l.report(arg.Line(), checkKeyArg, "key of %s does not come from KEYS: pass every key in KEYS so the cluster can route it", cmd)
	}
}

// multiAssign flags a, b = b, a. Lua 5.1 evaluates every value before it
// assigns; gopher-lua (and so miniredis and the gopher-lua test tier)
// assigns each target as soon as its value is known, so a later value that
// reads an earlier target sees the new value and the tiers disagree.
func (l *linter) multiAssign(st *ast.AssignStmt) {
	for j := 1; j < len(st.Rhs); j++ {
		for _, target := range st.Lhs[:min(j, len(st.Lhs))] {
			id, ok := target.(*ast.IdentExpr)
			if ok && mentions(st.Rhs[j], id.Value) {
				l.report(st.Rhs[j].Line(), checkMultiAssign, "value %d of this assignment reads %s, which it assigns first: gopher-lua (miniredis) sees the new %s, Redis the old; split the statement", j+1, id.Value, id.Value)
				return
			}
		}
	}
}

// fromKeys reports whether e is KEYS[...] or a local bound from it.
func (l *linter) fromKeys(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		id, ok := e.Object.(*ast.IdentExpr)
		return ok && id.Value == "KEYS" && l.lookup("KEYS") == nil
	case *ast.IdentExpr:
		v := l.lookup(e.Value)
		return v != nil && v.fromKeys
	}
	return false
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

// mentions reports whether the identifier name appears anywhere in e.
func mentions(e ast.Expr, name string) bool {
	found := false
	inspect(e, func(n any) bool {
		if id, ok := n.(*ast.IdentExpr); ok && id.Value == name {
			found = true
		}
		return !found
	})
	return found
}
