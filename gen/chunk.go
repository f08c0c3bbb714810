package gen

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// maxLocals is Lua 5.1's LUAI_MAXVARS: at most 200 local variables may be
// active at once in one function, the script's chunk included. Redis then
// refuses the script ("main function has more than 200 local variables");
// gopher-lua, and so miniredis, do not, so luagen says it first.
const maxLocals = 200

// callbackParams are the locals a Functions callback adds to a script's
// chunk: its parameters KEYS and ARGV.
const callbackParams = 2

// notInFunctions are the fields of the redis table that EVAL scripts have
// and Functions do not (checked on Redis 7.0): the debugger's, and
// replicate_commands, which Redis 5 made the default and 7 a no-op.
var notInFunctions = map[string]string{
	"replicate_commands": "Redis 5 and later replicate a script's effects anyway; drop the call",
	"breakpoint":         "it serves only the script debugger (redis-cli --ldb); drop the call",
	"debug":              "it serves only the script debugger (redis-cli --ldb); drop the call",
}

// chunkChecker runs in the one walk with the binding check and the lint.
// It refuses what Redis cannot compile and gopher-lua can (more than 200
// locals active in one function; ... in a function that does not take it),
// and collects what a Functions library could not hold: the script's chunk
// becomes the body of a callback, which is no vararg function and has two
// locals more, and Functions lack a few of the redis table's fields.
type chunkChecker struct {
	r        *reporter
	reported map[*function]bool
	// functions are the problems of the chunk as a Functions callback;
	// Generate reports them only when a library is asked for.
	functions Diagnostics
	libLocals bool // the chunk's locals problem, said once
	// multi are what a multi-key form could not hold besides functions's
	// chunk problems; reported only for a script with @multi.
	multi Diagnostics
}

// carriesOver are the fields of the redis table whose effect outlasts the
// call that makes it, within one EVALSHA: a multi-key form's later calls
// would run under it.
var carriesOver = map[string]bool{"setresp": true, "set_repl": true}

func newChunkChecker(r *reporter) *chunkChecker {
	return &chunkChecker{r: r, reported: map[*function]bool{}}
}

func (c *chunkChecker) inLibrary(line int, format string, args ...any) {
	c.functions = append(c.functions, Diagnostic{File: c.r.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (c *chunkChecker) visit(w *walker, n any) {
	switch n := n.(type) {
	case localsActive:
		fn := w.fn
		if fn.active > maxLocals && !c.reported[fn] {
			c.reported[fn] = true
			where := "the script's chunk"
			if !fn.main {
				where = fmt.Sprintf("the function at line %d", fn.line)
			}
			c.r.errorf(n.Line, "%d local variables active at once in %s: Lua 5.1 allows %d per function (a for loop counts 3 hidden ones), and Redis refuses the script; move some into a do ... end block or a table", fn.active, where, maxLocals)
		}
		if fn.main && fn.active > maxLocals-callbackParams && !c.libLocals && !c.reported[fn] {
			c.libLocals = true
			c.inLibrary(n.Line, "%d local variables active at once in the script's chunk: in a Functions library the chunk is the body of a callback whose parameters KEYS and ARGV count too, which leaves %d of Lua's %d; move some into a do ... end block or a table", fn.active, maxLocals-callbackParams, maxLocals)
		}
	case *ast.Comma3Expr:
		if !w.fn.vararg {
			c.r.errorf(n.Line(), "... in a function that does not take ...: Redis refuses the script (cannot use '...' outside a vararg function); add ... to the function's parameters")
		}
		if w.fn.main {
			c.inLibrary(n.Line(), "... at the script's chunk level: in a Functions library the chunk is the body of a callback, which is no vararg function, so Redis cannot compile it; read ARGV instead (under EVAL ... is empty anyway)")
		}
	case *ast.AttrGetExpr:
		obj, ok1 := n.Object.(*ast.IdentExpr)
		key, ok2 := n.Key.(*ast.StringExpr)
		if ok1 && ok2 && obj.Value == "redis" && w.lookup("redis") == nil && notInFunctions[key.Value] != "" {
			c.inLibrary(n.Line(), "redis.%s does not exist in a Functions library: %s", key.Value, notInFunctions[key.Value])
		}
		if ok1 && ok2 && obj.Value == "redis" && w.lookup("redis") == nil && carriesOver[key.Value] {
			c.multi = append(c.multi, Diagnostic{File: c.r.file, Line: n.Line(), Msg: fmt.Sprintf("@multi: redis.%s would carry over to the calls after this one in a multi-key call; drop @multi or the call", key.Value)})
		}
	}
}
