package gen

import "github.com/yuin/gopher-lua/ast"

// walker is luagen's one walk over gopher-lua's ast (which has no walker of
// its own). It keeps Lua's scopes as it goes, so a visitor can ask whether a
// name is a local and whether a local holds a key, and it knows which local
// a value is being bound to and which function it is in. The binding check,
// every lint check and the chunk checks run in the same walk.
type walker struct {
	scope *scope
	fn    *function
	// binding is the name of the local whose value is being walked, in
	// "local name = value"; "" elsewhere.
	binding string
	// visit sees every statement and expression, parents first. Assignment
	// targets that are plain names are not visited as expressions: they are
	// written, not read. Returning false skips the node's children. It also
	// sees a localsActive each time locals become active.
	visit func(w *walker, n any) bool
}

type scope struct {
	parent *scope
	vars   map[string]*local
	count  int // locals this scope made active, as Lua counts them
}

// function is the function being walked; the script's chunk is the first.
type function struct {
	main   bool // the script's chunk
	vararg bool // takes ...: the chunk does, under EVAL
	line   int  // where it starts
	// active counts the locals active now, as Lua 5.1 counts them against
	// its limit of 200: each local statement anew, even for a name
	// declared before, a for loop's hidden control variables, the
	// implicit arg of a vararg function, and the parameters.
	active int
}

// localsActive is what the visitor sees when locals become active at Line;
// walker.fn.active counts them.
type localsActive struct{ Line int }

type local struct {
	fromKeys bool // bound from KEYS[i] (or a local that was), so it may name a key
	keys     bool // bound to KEYS itself (local keys = KEYS), so keys[i] is a key
}

// walk visits every node under n (a []ast.Stmt, an ast.Stmt or an
// ast.Expr) with a fresh outermost scope.
func walk(n any, visit func(w *walker, n any) bool) {
	w := &walker{visit: visit, fn: &function{main: true, vararg: true, line: 1}}
	w.push()
	switch n := n.(type) {
	case []ast.Stmt:
		w.block(n)
	case ast.Stmt:
		w.stmt(n)
	case ast.Expr:
		w.expr(n)
	}
}

func (w *walker) push() { w.scope = &scope{parent: w.scope, vars: map[string]*local{}} }

func (w *walker) pop() {
	w.fn.active -= w.scope.count
	w.scope = w.scope.parent
}

// activate makes n locals of the current scope active at line.
func (w *walker) activate(n, line int) {
	w.scope.count += n
	w.fn.active += n
	w.visit(w, localsActive{Line: line})
}

func (w *walker) declare(name string, value ast.Expr) {
	id, isIdent := value.(*ast.IdentExpr)
	w.scope.vars[name] = &local{fromKeys: value != nil && w.fromKeys(value), keys: isIdent && w.isKeys(id)}
}

// lookup returns the local name refers to, or nil for a global.
func (w *walker) lookup(name string) *local {
	for s := w.scope; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	return nil
}

// isKeys reports whether id is the global KEYS or a local bound to it.
func (w *walker) isKeys(id *ast.IdentExpr) bool {
	v := w.lookup(id.Value)
	return v == nil && id.Value == "KEYS" || v != nil && v.keys
}

// fromKeys reports whether e is KEYS[...] (or t[...] for a local t bound
// to KEYS) or a local bound from it.
func (w *walker) fromKeys(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		id, ok := e.Object.(*ast.IdentExpr)
		return ok && w.isKeys(id)
	case *ast.IdentExpr:
		v := w.lookup(e.Value)
		return v != nil && v.fromKeys
	}
	return false
}

func (w *walker) block(stmts []ast.Stmt) {
	w.push()
	for _, st := range stmts {
		w.stmt(st)
	}
	w.pop()
}

func (w *walker) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
}

func (w *walker) stmt(st ast.Stmt) {
	outer := w.binding
	w.binding = ""
	defer func() { w.binding = outer }()
	if !w.visit(w, st) {
		return
	}
	switch st := st.(type) {
	case *ast.LocalAssignStmt:
		localFunc := false
		if len(st.Names) == 1 && len(st.Exprs) == 1 {
			if _, ok := st.Exprs[0].(*ast.FunctionExpr); ok {
				localFunc = true
				w.declare(st.Names[0], nil) // local function f: f is visible in its body
				w.activate(1, st.Line())
			}
		}
		for j, e := range st.Exprs {
			if j < len(st.Names) {
				w.binding = st.Names[j]
			}
			w.expr(e)
			w.binding = ""
		}
		for j, name := range st.Names {
			var value ast.Expr
			if j < len(st.Exprs) {
				value = st.Exprs[j]
			}
			w.declare(name, value)
		}
		if !localFunc {
			w.activate(len(st.Names), st.Line())
		}
	case *ast.AssignStmt:
		for _, e := range st.Lhs {
			if _, isName := e.(*ast.IdentExpr); !isName {
				w.expr(e)
			}
		}
		w.exprs(st.Rhs)
	case *ast.FuncCallStmt:
		w.expr(st.Expr)
	case *ast.DoBlockStmt:
		w.block(st.Stmts)
	case *ast.WhileStmt:
		w.expr(st.Condition)
		w.block(st.Stmts)
	case *ast.RepeatStmt:
		// The condition sees the body's locals.
		w.push()
		for _, s := range st.Stmts {
			w.stmt(s)
		}
		w.expr(st.Condition)
		w.pop()
	case *ast.IfStmt:
		w.expr(st.Condition)
		w.block(st.Then)
		w.block(st.Else)
	case *ast.NumberForStmt:
		w.expr(st.Init)
		w.expr(st.Limit)
		if st.Step != nil {
			w.expr(st.Step)
		}
		w.push()
		w.declare(st.Name, nil)
		w.activate(3+1, st.Line()) // (for index), (for limit), (for step), and the name
		w.block(st.Stmts)
		w.pop()
	case *ast.GenericForStmt:
		w.exprs(st.Exprs)
		overKeys := false
		for _, e := range st.Exprs {
			overKeys = overKeys || mentions(e, "KEYS")
		}
		w.push()
		for _, name := range st.Names {
			w.scope.vars[name] = &local{fromKeys: overKeys} // for _, key in ipairs(KEYS)
		}
		w.activate(3+len(st.Names), st.Line()) // (for generator), (for state), (for control), and the names
		w.block(st.Stmts)
		w.pop()
	case *ast.FuncDefStmt:
		if _, isName := st.Name.Func.(*ast.IdentExpr); !isName && st.Name.Func != nil {
			w.expr(st.Name.Func)
		}
		if st.Name.Receiver != nil {
			w.expr(st.Name.Receiver)
		}
		w.function(st.Func, st.Name.Method != "", st.Line())
	case *ast.ReturnStmt:
		w.exprs(st.Exprs)
	}
}

func (w *walker) function(f *ast.FunctionExpr, method bool, line int) {
	outer := w.fn
	w.fn = &function{vararg: f.ParList.HasVargs, line: line}
	w.push()
	params := len(f.ParList.Names)
	if method {
		w.declare("self", nil)
		params++
	}
	for _, p := range f.ParList.Names {
		w.declare(p, nil)
	}
	if f.ParList.HasVargs {
		w.declare("arg", nil) // Lua 5.1's implicit vararg table
		params++
	}
	w.activate(params, line)
	w.block(f.Stmts)
	w.pop()
	w.fn = outer
}

func (w *walker) expr(e ast.Expr) {
	if e == nil || !w.visit(w, e) {
		return
	}
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			w.expr(f.Key)
			w.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		w.expr(e.Func)
		w.expr(e.Receiver)
		w.exprs(e.Args)
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.function(e, false, e.Line())
	}
}

// mentions reports whether the name is read anywhere in e.
func mentions(e ast.Expr, name string) bool {
	found := false
	walk(e, func(_ *walker, n any) bool {
		if id, ok := n.(*ast.IdentExpr); ok && id.Value == name {
			found = true
		}
		return !found
	})
	return found
}

// index returns "KEYS" or "ARGV" and i when e is KEYS[i] or ARGV[i] with a
// literal integer i.
func index(e any) (table string, i int, ok bool) {
	g, isGet := e.(*ast.AttrGetExpr)
	if !isGet {
		return "", 0, false
	}
	id, isIdent := g.Object.(*ast.IdentExpr)
	if !isIdent || (id.Value != "KEYS" && id.Value != "ARGV") {
		return "", 0, false
	}
	num, isNum := g.Key.(*ast.NumberExpr)
	if !isNum {
		return "", 0, false
	}
	n, err := parseLuaInt(num.Value)
	if err != nil {
		return "", 0, false
	}
	return id.Value, n, true
}
