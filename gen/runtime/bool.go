package runtime

func (e encoder) bool(v bool) {
	if v {
		e.cl.addString("1")
	} else {
		e.cl.addString("0")
	}
}

// bool accepts 1 or 0 (Lua's true arrives as 1) and RESP3 booleans.
func (d *decoder) bool(i int, name string) bool {
	if d.err != nil {
		return false
	}
	switch v := d.vals[i].(type) {
	case int64:
		if v == 0 || v == 1 {
			return v == 1
		}
	case bool:
		return v
	}
	d.fail(i, name, "bool (1 or 0)")
	return false
}
