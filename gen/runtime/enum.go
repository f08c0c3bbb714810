package runtime

import (
	"strconv"
	"strings"
)

func (e encoder) enum(name, v string, words ...string) {
	for _, w := range words {
		if v == w {
			e.cl.addString(v)
			return
		}
	}
	e.fail(name, strconv.Quote(v), "is not one of "+strings.Join(words, ", "))
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
