package gen

import "github.com/yuin/gopher-lua/ast"

// inspect calls fn for every statement and expression under n, depth
// first, parents before children; when fn returns false the children of
// that node are skipped. gopher-lua's ast has no walker of its own.
func inspect(n any, fn func(any) bool) {
	switch n := n.(type) {
	case []ast.Stmt:
		for _, s := range n {
			inspect(s, fn)
		}
		return
	case []ast.Expr:
		for _, e := range n {
			inspect(e, fn)
		}
		return
	case nil:
		return
	}
	if !fn(n) {
		return
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		inspect(n.Lhs, fn)
		inspect(n.Rhs, fn)
	case *ast.LocalAssignStmt:
		inspect(n.Exprs, fn)
	case *ast.FuncCallStmt:
		inspect(n.Expr, fn)
	case *ast.DoBlockStmt:
		inspect(n.Stmts, fn)
	case *ast.WhileStmt:
		inspect(n.Condition, fn)
		inspect(n.Stmts, fn)
	case *ast.RepeatStmt:
		inspect(n.Stmts, fn)
		inspect(n.Condition, fn)
	case *ast.IfStmt:
		inspect(n.Condition, fn)
		inspect(n.Then, fn)
		inspect(n.Else, fn)
	case *ast.NumberForStmt:
		inspect(n.Init, fn)
		inspect(n.Limit, fn)
		if n.Step != nil {
			inspect(n.Step, fn)
		}
		inspect(n.Stmts, fn)
	case *ast.GenericForStmt:
		inspect(n.Exprs, fn)
		inspect(n.Stmts, fn)
	case *ast.FuncDefStmt:
		inspect(n.Name.Func, fn)
		if n.Name.Receiver != nil {
			inspect(n.Name.Receiver, fn)
		}
		inspect(n.Func, fn)
	case *ast.ReturnStmt:
		inspect(n.Exprs, fn)
	case *ast.AttrGetExpr:
		inspect(n.Object, fn)
		inspect(n.Key, fn)
	case *ast.TableExpr:
		for _, f := range n.Fields {
			if f.Key != nil {
				inspect(f.Key, fn)
			}
			inspect(f.Value, fn)
		}
	case *ast.FuncCallExpr:
		if n.Func != nil {
			inspect(n.Func, fn)
		}
		if n.Receiver != nil {
			inspect(n.Receiver, fn)
		}
		inspect(n.Args, fn)
	case *ast.LogicalOpExpr:
		inspect(n.Lhs, fn)
		inspect(n.Rhs, fn)
	case *ast.RelationalOpExpr:
		inspect(n.Lhs, fn)
		inspect(n.Rhs, fn)
	case *ast.StringConcatOpExpr:
		inspect(n.Lhs, fn)
		inspect(n.Rhs, fn)
	case *ast.ArithmeticOpExpr:
		inspect(n.Lhs, fn)
		inspect(n.Rhs, fn)
	case *ast.UnaryMinusOpExpr:
		inspect(n.Expr, fn)
	case *ast.UnaryNotOpExpr:
		inspect(n.Expr, fn)
	case *ast.UnaryLenOpExpr:
		inspect(n.Expr, fn)
	case *ast.FunctionExpr:
		inspect(n.Stmts, fn)
	}
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
