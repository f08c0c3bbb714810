package httplimit_test

import (
	"fmt"
	"strconv"
	"strings"
)

// sfItem is one item of a Structured Field list (RFC 9651) as the RateLimit
// fields use it: a String with Integer parameters.
type sfItem struct {
	Name   string
	Params map[string]int64
}

// parseSFList parses a List of String items with Integer parameters,
// strictly enough to reject what a conforming parser would: the tests read
// the fields this way rather than comparing text.
func parseSFList(s string) ([]sfItem, error) {
	var items []sfItem
	i := 0
	for {
		if i >= len(s) || s[i] != '"' {
			return nil, fmt.Errorf("at %d of %q: want a string", i, s)
		}
		var name strings.Builder
		for i++; ; i++ {
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated string in %q", s)
			}
			c := s[i]
			if c == '\\' {
				if i+1 >= len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
					return nil, fmt.Errorf("bad escape in %q", s)
				}
				i++
				name.WriteByte(s[i])
				continue
			}
			if c == '"' {
				i++
				break
			}
			if c < 0x20 || c > 0x7e {
				return nil, fmt.Errorf("byte %#x in a string", c)
			}
			name.WriteByte(c)
		}
		it := sfItem{Name: name.String(), Params: map[string]int64{}}
		for i < len(s) && s[i] == ';' {
			i++
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] == '-' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			key := s[i:j]
			if key == "" || j >= len(s) || s[j] != '=' {
				return nil, fmt.Errorf("bad parameter at %d of %q", i, s)
			}
			i = j + 1
			for j = i; j < len(s) && (s[j] == '-' || s[j] >= '0' && s[j] <= '9'); j++ {
			}
			if j-i > 15+1 || j == i {
				return nil, fmt.Errorf("bad integer at %d of %q", i, s)
			}
			v, err := strconv.ParseInt(s[i:j], 10, 64)
			if err != nil {
				return nil, err
			}
			it.Params[key] = v
			i = j
		}
		items = append(items, it)
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			return items, nil
		}
		if s[i] != ',' {
			return nil, fmt.Errorf("at %d of %q: want ','", i, s)
		}
		for i++; i < len(s) && (s[i] == ' ' || s[i] == '\t'); i++ {
		}
	}
}
