package gen

import (
	"bytes"
	"path"
	"regexp"
	"strings"

	"github.com/yuin/gopher-lua/parse"
)

var fileRE = regexp.MustCompile(`^[a-z][a-z0-9_]*\.lua$`)

// ParseScript reads one script: its header, the header checked against the
// body, and the lint. file is used in messages and to name the script; it
// is never opened.
func ParseScript(file string, src []byte) (*Script, Diagnostics) {
	s, diags, _ := parseScript(file, src)
	return s, diags
}

// parseScript is ParseScript that also returns what keeps the script out of
// a Functions library, which Generate reports only when one is asked for.
func parseScript(file string, src []byte) (s *Script, diags, functions Diagnostics) {
	r := &reporter{file: file}
	base := path.Base(strings.ReplaceAll(file, `\`, "/"))
	if !fileRE.MatchString(base) {
		r.errorf(1, "file name %q must be lower case letters, digits and _, ending in .lua (it names the Go API)", base)
	}
	s = &Script{Name: strings.TrimSuffix(base, ".lua"), File: file, Source: src}

	text := string(src)
	lines := luaLines(text)
	parseHeader(s, lines, r)
	headerOK := len(r.diags) == 0

	// gopher-lua cannot parse a #! line; blank it so line numbers hold.
	body := src
	if s.Shebang {
		nl := bytes.IndexAny(src, "\r\n")
		if nl < 0 {
			nl = len(src)
		}
		body = append(bytes.Repeat([]byte(" "), nl), src[nl:]...)
	}
	chunk, err := parse.Parse(bytes.NewReader(body), file)
	if err != nil {
		if pe, ok := err.(*parse.Error); ok {
			line := pe.Pos.Line
			if line <= 0 {
				line = len(lines)
			}
			if pe.Message == "syntax error" {
				r.errorf(line, "syntax error near %q", pe.Token)
			} else {
				r.errorf(line, "syntax error near %q: %s", pe.Token, pe.Message)
			}
		} else {
			r.errorf(1, "syntax error: %v", err)
		}
		r.diags.sort()
		return s, r.diags, nil
	}
	// One walk runs the binding check, every lint check and the chunk
	// checks. A broken header would make every binding look wrong, so the
	// bindings are reported only once the header parses.
	b := newBinder()
	l := newLinter(s, src, r)
	c := newChunkChecker(r)
	walk(chunk, func(w *walker, n any) bool {
		b.visit(w, n)
		l.visit(w, n)
		c.visit(w, n)
		return true
	})
	if headerOK {
		b.check(s, r)
	}
	l.finish()
	if s.Multi {
		// The multi-key form wraps the chunk in a function too (but runs
		// under EVAL: the redis table's EVAL-only fields are there).
		for _, d := range c.functions {
			if strings.Contains(d.Msg, "does not exist in a Functions library") {
				continue
			}
			d.Msg = "@multi: " + strings.Replace(d.Msg, "in a Functions library the chunk is the body of a callback", "in the multi-key form the chunk is the body of a function", 1)
			r.diags = append(r.diags, d)
		}
		r.diags = append(r.diags, c.multi...)
	}
	r.diags.sort()
	return s, r.diags, c.functions
}

// luaLines splits src into lines as Lua's lexer counts them: \n, \r, \r\n
// and \n\r each end one line, so a message's line number is the one the
// Lua parser (and Redis) would give.
func luaLines(src string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\n' && c != '\r' {
			continue
		}
		lines = append(lines, src[start:i])
		if i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r') && src[i+1] != c {
			i++
		}
		start = i + 1
	}
	return append(lines, src[start:])
}
