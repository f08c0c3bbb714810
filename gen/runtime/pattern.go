package runtime

import (
	"regexp"
	"strconv"
)

// pattern sends v when the whole of it matches re (luagen compiles the
// header's string/re/ as ^(?:re)$), and fails the call otherwise.
func (e encoder) pattern(name, v string, re *regexp.Regexp) {
	if !re.MatchString(v) {
		e.fail(name, strconv.Quote(v), "does not match "+re.String())
	}
	e.cl.addString(v)
}

func (d *decoder) pattern(i int, name string, re *regexp.Regexp) string {
	v := d.string(i, name)
	if d.err == nil && !re.MatchString(v) {
		d.fail(i, name, "a string matching "+re.String())
		return ""
	}
	return v
}
