package runtime

// rest decodes the elements from index from on, for a ...name @return.
func rest[T any](d *decoder, from int, one func(int) T) []T {
	if d.err != nil {
		return nil
	}
	out := make([]T, 0, len(d.vals)-from)
	for i := from; i < len(d.vals); i++ {
		out = append(out, one(i))
	}
	return out
}
