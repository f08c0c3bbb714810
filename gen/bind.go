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

// binder holds the header to the body: each KEYS[i] and ARGV[i] must be
// bound once in "local name = ...", with the i-th declared name, so a reader
// of either one learns the same contract. Only that binding is held to the
// header: the same index may be read again anywhere.
type binder struct {
	uses    map[string]map[int][]use
	rest    map[string]bool // KEYS/ARGV read other than by a literal index
	indexed map[*ast.IdentExpr]bool
}

type use struct {
	line  int
	local string // the local being bound, "" when read elsewhere
}

func newBinder() *binder {
	return &binder{
		uses:    map[string]map[int][]use{"KEYS": {}, "ARGV": {}},
		rest:    map[string]bool{},
		indexed: map[*ast.IdentExpr]bool{},
	}
}

func (b *binder) visit(w *walker, n any) {
	if t, i, ok := index(n); ok && w.lookup(t) == nil {
		g := n.(*ast.AttrGetExpr)
		b.indexed[g.Object.(*ast.IdentExpr)] = true
		b.uses[t][i] = append(b.uses[t][i], use{line: g.Line(), local: w.binding})
		return
	}
	// Any other read of KEYS or ARGV (KEYS[i] with a computed i, #ARGV,
	// unpack(ARGV, 3), ipairs(KEYS)) counts as reading the variadic rest.
	if id, ok := n.(*ast.IdentExpr); ok && (id.Value == "KEYS" || id.Value == "ARGV") && !b.indexed[id] && w.lookup(id.Value) == nil {
		b.rest[id.Value] = true
	}
}

func (b *binder) check(s *Script, r *reporter) {
	b.table("KEYS", "@key", s.Keys, r)
	b.table("ARGV", "@arg", s.Args, r)
}

func (b *binder) table(table, tag string, fs []Field, r *reporter) {
	fixed := len(fs)
	variadic := fixed > 0 && fs[fixed-1].Variadic
	if variadic {
		fixed--
	}
	idx := make([]int, 0, len(b.uses[table]))
	for i := range b.uses[table] {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		us := b.uses[table][i]
		switch {
		case i < 1:
			for _, u := range us {
				r.errorf(u.line, "%s[%d]: Lua tables start at 1", table, i)
			}
			continue
		case i > fixed && variadic:
			b.rest[table] = true
			continue
		case i > fixed:
			for _, u := range us {
				r.errorf(u.line, "%s[%d] is not declared: the header has %d %s", table, i, fixed, tag)
			}
			continue
		}
		name := fs[i-1].Name
		bound, wrong := false, -1
		for j, u := range us {
			bound = bound || u.local == name
			if u.local != "" && u.local != name && wrong < 0 {
				wrong = j
			}
		}
		switch {
		case bound:
		case wrong >= 0:
			r.errorf(us[wrong].line, "%s[%d] is bound to local %q, but %s %d is %q", table, i, us[wrong].local, tag, i, name)
		default:
			r.errorf(us[0].line, "%s[%d] is read but never bound: bind it once in \"local %s = ...%s[%d]...\" (later reads may be anywhere)", table, i, name, table, i)
		}
	}
	for i, f := range fs {
		if f.Variadic {
			if !b.rest[table] {
				r.errorf(f.Line, "%s ...%s is never read: the body does not use %s beyond %s[%d]", tag, f.Name, table, table, fixed)
			}
			continue
		}
		if len(b.uses[table][i+1]) == 0 {
			r.errorf(f.Line, "%s %s is never read: want \"local %s = ...%s[%d]...\"", tag, f.Name, f.Name, table, i+1)
		}
	}
}
