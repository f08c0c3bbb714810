package gen

// comment is one Lua comment: the line it starts on and its text after
// the -- (and after the [[ of a long comment).
type comment struct {
	line int
	text string
}

// luaComments finds the comments of a Lua source the way Lua's lexer does:
// a -- inside a string or a long string is not a comment, so a directive
// such as luagen:ignore counts only where Lua would ignore it too. A #!
// first line is skipped. Unterminated strings end at the end of their line
// (the parser reports them).
func luaComments(src []byte) []comment {
	var out []comment
	line := 1
	i := 0
	// newline returns how many bytes the line break at j takes (\n, \r,
	// \r\n and \n\r are one break each, as Lua counts them), or 0.
	newline := func(j int) int {
		if j >= len(src) || (src[j] != '\n' && src[j] != '\r') {
			return 0
		}
		if j+1 < len(src) && (src[j+1] == '\n' || src[j+1] == '\r') && src[j+1] != src[j] {
			return 2
		}
		return 1
	}
	if len(src) > 1 && src[0] == '#' && src[1] == '!' {
		for i < len(src) && newline(i) == 0 {
			i++
		}
	}
	// longBracket returns the level of a [[ or [=[ opening at j, or -1.
	longBracket := func(j int) int {
		if j >= len(src) || src[j] != '[' {
			return -1
		}
		k := j + 1
		for k < len(src) && src[k] == '=' {
			k++
		}
		if k < len(src) && src[k] == '[' {
			return k - j - 1
		}
		return -1
	}
	// skipLong moves past a long bracket of the given level that opens at
	// j, counting lines, and returns the text inside.
	skipLong := func(j, level int) (int, string) {
		start := j + level + 2
		for k := start; k < len(src); k++ {
			if n := newline(k); n > 0 {
				line++
				k += n - 1
				continue
			}
			if src[k] != ']' || k+level+1 >= len(src) {
				continue
			}
			match := true
			for m := 1; m <= level; m++ {
				if src[k+m] != '=' {
					match = false
					break
				}
			}
			if match && src[k+level+1] == ']' {
				return k + level + 2, string(src[start:k])
			}
		}
		return len(src), string(src[start:])
	}
	for i < len(src) {
		c := src[i]
		switch {
		case newline(i) > 0:
			i += newline(i)
			line++
		case c == '"' || c == '\'':
			i++
			for i < len(src) && src[i] != c && newline(i) == 0 {
				if src[i] == '\\' && newline(i+1) > 0 {
					line++
					i += 1 + newline(i+1)
					continue
				}
				if src[i] == '\\' {
					i++
				}
				i++
			}
			if i < len(src) && src[i] == c {
				i++
			}
		case c == '[' && longBracket(i) >= 0:
			i, _ = skipLong(i, longBracket(i))
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			start := line
			if level := longBracket(i + 2); level >= 0 {
				var text string
				i, text = skipLong(i+2, level)
				out = append(out, comment{line: start, text: text})
				continue
			}
			j := i + 2
			for j < len(src) && newline(j) == 0 {
				j++
			}
			out = append(out, comment{line: start, text: string(src[i+2 : j])})
			i = j
		default:
			i++
		}
	}
	return out
}
