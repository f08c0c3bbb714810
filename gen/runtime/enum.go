package runtime

import (
	"fmt"
	"strconv"
	"strings"
)

// The generated call passes words as constants, and a constant boxed in an
// interface is static data: sending the matching word rather than v costs
// no allocation.
func (e encoder) enum(name, v string, words ...any) {
	for _, w := range words {
		if s, _ := w.(string); s == v {
			e.cl.addWord(w)
			return
		}
	}
	list := make([]string, len(words))
	for i, w := range words {
		list[i] = fmt.Sprint(w)
	}
	e.fail(name, strconv.Quote(v), "is not one of "+strings.Join(list, ", "))
}

func (d *decoder) enum(i int, name string, words ...string) string {
	v := d.string(i, name)
	if d.err != nil {
		return ""
	}
	for _, w := range words {
		if v == w {
			return v
		}
	}
	d.fail(i, name, "one of "+strings.Join(words, ", "))
	return ""
}
