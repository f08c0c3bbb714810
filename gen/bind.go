package gen

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

func parseLuaInt(s string) (int, error) {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("not a small integer: %s", s)
	}
	return int(n), nil
}

// checkBindings holds the header to the body: the body must read KEYS[i]
// and ARGV[i] only in "local name = ...", with the i-th declared name, so a
// reader of either one learns the same contract.
func checkBindings(s *Script, chunk []ast.Stmt, r *reporter) {
	type use struct {
		line  int
		local string // "" when read outside a local statement
	}
	uses := map[string]map[int][]use{"KEYS": {}, "ARGV": {}}
	restUsed := map[string]bool{} // KEYS/ARGV read other than by a literal index
	bound := map[any]bool{}

	inspect(chunk, func(n any) bool {
		l, ok := n.(*ast.LocalAssignStmt)
		if !ok {
			return true
		}
		for j, e := range l.Exprs {
			name := ""
			if j < len(l.Names) {
				name = l.Names[j]
			}
			inspect(e, func(n any) bool {
				if t, i, ok := index(n); ok {
					bound[n] = true
					uses[t][i] = append(uses[t][i], use{line: n.(ast.Expr).Line(), local: name})
				}
				return true
			})
		}
		return true
	})
	inspect(chunk, func(n any) bool {
		if t, i, ok := index(n); ok {
			if !bound[n] {
				uses[t][i] = append(uses[t][i], use{line: n.(ast.Expr).Line()})
			}
			return false
		}
		// Any other read of KEYS or ARGV (KEYS[i] with a computed i, #ARGV,
		// unpack(ARGV, 3), ipairs(KEYS)) counts as reading the variadic rest.
		if id, ok := n.(*ast.IdentExpr); ok && (id.Value == "KEYS" || id.Value == "ARGV") {
			restUsed[id.Value] = true
		}
		return true
	})

	check := func(table, tag string, fs []Field) {
		fixed := len(fs)
		variadic := fixed > 0 && fs[fixed-1].Variadic
		if variadic {
			fixed--
		}
		idx := make([]int, 0, len(uses[table]))
		for i := range uses[table] {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			for _, u := range uses[table][i] {
				switch {
				case i < 1:
					r.errorf(u.line, "%s[%d]: Lua tables start at 1", table, i)
				case i > fixed && variadic:
					restUsed[table] = true
				case i > fixed:
					r.errorf(u.line, "%s[%d] is not declared: the header has %d %s", table, i, fixed, tag)
				case u.local == "":
					r.errorf(u.line, "%s[%d] must be read in \"local %s = ...\"", table, i, fs[i-1].Name)
				case u.local != fs[i-1].Name:
					r.errorf(u.line, "%s[%d] is bound to local %q, but %s %d is %q", table, i, u.local, tag, i, fs[i-1].Name)
				}
			}
		}
		for i, f := range fs {
			if f.Variadic {
				if !restUsed[table] {
					r.errorf(f.Line, "%s ...%s is never read: the body does not use %s beyond %s[%d]", tag, f.Name, table, table, fixed)
				}
				continue
			}
			if len(uses[table][i+1]) == 0 {
				r.errorf(f.Line, "%s %s is never read: want \"local %s = ...%s[%d]...\"", tag, f.Name, f.Name, table, i+1)
			}
		}
	}
	check("KEYS", "@key", s.Keys)
	check("ARGV", "@arg", s.Args)
}
