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

// chunkCounter counts the locals active at once in every function of a
// script, as Lua's compiler does (a for loop adds its hidden control
// variables, a vararg function its implicit local arg), and notes what a
// Functions library could not compile: the script's chunk becomes the body
// of a callback, which is no vararg function and has two locals more. It
// also refuses ... in a function that does not take it, which gopher-lua
// accepts and Redis does not.
type chunkCounter struct {
	r *reporter
	// funcDiags are the problems of the chunk as a Functions callback;
	// Generate reports them only when a library is asked for.
	funcDiags Diagnostics
}

type fnState struct {
	active, line int
	main, vararg bool
	reported     bool // over maxLocals, said once per function
	reportedLib  bool // the chunk over maxLocals-callbackParams, said once
}

// countChunk checks the locals of every function and collects the chunk's
// problems as a Functions callback.
func countChunk(chunk []ast.Stmt, r *reporter) Diagnostics {
	c := &chunkCounter{r: r}
	c.block(&fnState{main: true, vararg: true}, chunk)
	return c.funcDiags
}

func (c *chunkCounter) function(f *ast.FunctionExpr, self bool, line int) {
	fs := &fnState{line: line, active: len(f.ParList.Names), vararg: f.ParList.HasVargs}
	if self {
		fs.active++
	}
	if f.ParList.HasVargs {
		fs.active++ // Lua 5.1's implicit local arg
	}
	c.block(fs, f.Stmts)
}

// declare makes n more locals active at line.
func (c *chunkCounter) declare(fs *fnState, n, line int) {
	fs.active += n
	if fs.active > maxLocals && !fs.reported {
		fs.reported = true
		where := "the script's chunk"
		if !fs.main {
			where = fmt.Sprintf("the function at line %d", fs.line)
		}
		c.r.errorf(line, "%d local variables active at once in %s: Lua 5.1 allows %d per function (a for loop counts 3 hidden ones), and Redis refuses the script; move some into a do ... end block or a table", fs.active, where, maxLocals)
	}
	if fs.main && fs.active > maxLocals-callbackParams && !fs.reportedLib && !fs.reported {
		fs.reportedLib = true
		c.funcDiags = append(c.funcDiags, Diagnostic{File: c.r.file, Line: line,
			Msg: fmt.Sprintf("%d local variables active at once in the script's chunk: in a Functions library the chunk is the body of a callback whose parameters KEYS and ARGV count too, which leaves %d of Lua's %d; move some into a do ... end block or a table", fs.active, maxLocals-callbackParams, maxLocals)})
	}
}

func (c *chunkCounter) block(fs *fnState, stmts []ast.Stmt) {
	outer := fs.active
	for _, st := range stmts {
		c.stmt(fs, st)
	}
	fs.active = outer
}

func (c *chunkCounter) stmt(fs *fnState, st ast.Stmt) {
	switch st := st.(type) {
	case *ast.LocalAssignStmt:
		if len(st.Names) == 1 && len(st.Exprs) == 1 {
			if f, ok := st.Exprs[0].(*ast.FunctionExpr); ok {
				c.declare(fs, 1, st.Line()) // local function f: f is active in its own body
				c.function(f, false, st.Line())
				return
			}
		}
		c.exprs(fs, st.Exprs)
		c.declare(fs, len(st.Names), st.Line())
	case *ast.AssignStmt:
		c.exprs(fs, st.Lhs)
		c.exprs(fs, st.Rhs)
	case *ast.FuncCallStmt:
		c.expr(fs, st.Expr)
	case *ast.DoBlockStmt:
		c.block(fs, st.Stmts)
	case *ast.WhileStmt:
		c.expr(fs, st.Condition)
		c.block(fs, st.Stmts)
	case *ast.RepeatStmt:
		// The condition sees the body's locals.
		outer := fs.active
		for _, s := range st.Stmts {
			c.stmt(fs, s)
		}
		c.expr(fs, st.Condition)
		fs.active = outer
	case *ast.IfStmt:
		c.expr(fs, st.Condition)
		c.block(fs, st.Then)
		c.block(fs, st.Else)
	case *ast.NumberForStmt:
		c.exprs(fs, []ast.Expr{st.Init, st.Limit, st.Step})
		outer := fs.active
		c.declare(fs, 3+1, st.Line()) // (for index), (for limit), (for step), and the name
		c.block(fs, st.Stmts)
		fs.active = outer
	case *ast.GenericForStmt:
		c.exprs(fs, st.Exprs)
		outer := fs.active
		c.declare(fs, 3+len(st.Names), st.Line()) // (for generator), (for state), (for control)
		c.block(fs, st.Stmts)
		fs.active = outer
	case *ast.FuncDefStmt:
		c.expr(fs, st.Name.Func)
		c.expr(fs, st.Name.Receiver)
		c.function(st.Func, st.Name.Method != "", st.Line())
	case *ast.ReturnStmt:
		c.exprs(fs, st.Exprs)
	}
}

func (c *chunkCounter) exprs(fs *fnState, es []ast.Expr) {
	for _, e := range es {
		c.expr(fs, e)
	}
}

func (c *chunkCounter) expr(fs *fnState, e ast.Expr) {
	switch e := e.(type) {
	case nil:
	case *ast.Comma3Expr:
		if !fs.vararg {
			// gopher-lua accepts it; Lua 5.1 does not.
			c.r.errorf(e.Line(), "... in a function that does not take ...: Redis refuses the script (cannot use '...' outside a vararg function); add ... to the function's parameters")
		}
		if fs.main {
			c.funcDiags = append(c.funcDiags, Diagnostic{File: c.r.file, Line: e.Line(),
				Msg: "... at the script's chunk level: in a Functions library the chunk is the body of a callback, which is no vararg function, so Redis cannot compile it; read ARGV instead (under EVAL ... is empty anyway)"})
		}
	case *ast.AttrGetExpr:
		if obj, ok := e.Object.(*ast.IdentExpr); ok && obj.Value == "redis" {
			if key, ok := e.Key.(*ast.StringExpr); ok && notInFunctions[key.Value] != "" {
				c.funcDiags = append(c.funcDiags, Diagnostic{File: c.r.file, Line: e.Line(),
					Msg: fmt.Sprintf("redis.%s does not exist in a Functions library: %s", key.Value, notInFunctions[key.Value])})
			}
		}
		c.expr(fs, e.Object)
		c.expr(fs, e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			c.expr(fs, f.Key)
			c.expr(fs, f.Value)
		}
	case *ast.FuncCallExpr:
		c.expr(fs, e.Func)
		c.expr(fs, e.Receiver)
		c.exprs(fs, e.Args)
	case *ast.LogicalOpExpr:
		c.exprs(fs, []ast.Expr{e.Lhs, e.Rhs})
	case *ast.RelationalOpExpr:
		c.exprs(fs, []ast.Expr{e.Lhs, e.Rhs})
	case *ast.StringConcatOpExpr:
		c.exprs(fs, []ast.Expr{e.Lhs, e.Rhs})
	case *ast.ArithmeticOpExpr:
		c.exprs(fs, []ast.Expr{e.Lhs, e.Rhs})
	case *ast.UnaryMinusOpExpr:
		c.expr(fs, e.Expr)
	case *ast.UnaryNotOpExpr:
		c.expr(fs, e.Expr)
	case *ast.UnaryLenOpExpr:
		c.expr(fs, e.Expr)
	case *ast.FunctionExpr:
		c.function(e, false, e.Line())
	}
}
