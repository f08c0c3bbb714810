package gen

import (
	"fmt"
	"sort"
	"strings"
)

// A Diagnostic is one problem in one script, reported like a compiler error.
type Diagnostic struct {
	File string
	Line int
	Msg  string
	// Warning marks advice about a script that works (a lint check of
	// severity Warning): printed as "file:line: warning: msg".
	Warning bool
}

func (d Diagnostic) String() string {
	if d.Warning {
		return fmt.Sprintf("%s:%d: warning: %s", d.File, d.Line, d.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", d.File, d.Line, d.Msg)
}

// Diagnostics is every problem Generate found. It is returned as the error
// so callers can print all of them, not just the first.
type Diagnostics []Diagnostic

// Errors returns the diagnostics that are not warnings.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if !d.Warning {
			out = append(out, d)
		}
	}
	return out
}

func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// sort orders by file, then line, then message, so output is deterministic
// whatever order the checks ran in.
func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Msg < b.Msg
	})
}

// reporter collects diagnostics for one file.
type reporter struct {
	file  string
	diags Diagnostics
}

func (r *reporter) warnf(line int, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{File: r.file, Line: line, Msg: fmt.Sprintf(format, args...), Warning: true})
}

func (r *reporter) errorf(line int, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{File: r.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}
