package runtime

import "strconv"

// rest decodes the elements from index from on, for a ...name @return, in
// groups of size (a record's fields; 1 otherwise), and checks how many
// groups there are against r (nil: any).
func rest[T any](d *decoder, from, size int, name string, r *intRange, one func(int) T) []T {
	if d.err != nil {
		return nil
	}
	n := len(d.vals) - from
	if n%size != 0 {
		d.err = &ReplyError{Script: d.info.file, Element: from + 1, Name: name,
			Want: "whole records of " + strconv.Itoa(size) + " elements", Got: strconv.Itoa(n) + " elements"}
		return nil
	}
	if !r.holds(int64(n / size)) {
		d.err = &ReplyError{Script: d.info.file, Element: from + 1, Name: name,
			Want: "a count in " + r.String(), Got: strconv.Itoa(n / size)}
		return nil
	}
	out := make([]T, 0, n/size)
	for i := from; i < len(d.vals); i += size {
		out = append(out, one(i))
	}
	return out
}

// count checks how many values, keys or records (what) a variadic got.
func (e encoder) count(name, what string, n int, r *intRange) {
	if !r.holds(int64(n)) {
		e.fail(name, strconv.Itoa(n)+" "+what, "is a count out of range "+r.String())
	}
}
