package luatest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

const (
	prologueBegin = "-- redlimit:prologue:begin"
	prologueEnd   = "-- redlimit:prologue:end\n"
)

// prologue returns a script's shared prologue: the lines from its begin
// marker through its end marker.
func prologue(src string) (string, bool) {
	i := strings.Index(src, prologueBegin)
	j := strings.Index(src, prologueEnd)
	if i < 0 || j < i || strings.Count(src, prologueBegin) != 1 || strings.Count(src, prologueEnd) != 1 {
		return "", false
	}
	return src[i : j+len(prologueEnd)], true
}

// TestProloguesAreIdentical: every script carries the same prologue (strict
// integers, argument errors, the server's clock and the caller-clock bound,
// exact mul-div), byte for byte, right after its header, so a fix to one
// copy cannot leave another behind and each file still stands alone.
func TestProloguesAreIdentical(t *testing.T) {
	var first, firstName string
	for _, name := range scenario.Scripts() {
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := prologue(src)
		if !ok {
			t.Errorf("%s: want exactly one %q ... %q block", name, prologueBegin, strings.TrimSpace(prologueEnd))
			continue
		}
		header := src[:strings.Index(src, p)]
		for _, line := range strings.SplitAfter(header, "\n") {
			if line != "" && !strings.HasPrefix(line, "---") {
				t.Errorf("%s: the prologue must follow the header at once, not %q", name, line)
			}
		}
		if first == "" {
			first, firstName = p, name
			continue
		}
		if p != first {
			t.Errorf("%s's prologue differs from %s's:\n%s", name, firstName, lineDiff(first, p))
		}
	}
}

// lineDiff lists the lines of b that differ from a, by number.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out.WriteString("  line " + strconv.Itoa(i+1) + ":\n    - " + x + "\n    + " + y + "\n")
		}
	}
	return out.String()
}
