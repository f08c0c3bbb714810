package runtime

func (e encoder) string(v string) { e.cl.addString(v) }

func (d *decoder) string(i int, name string) string {
	if d.err != nil {
		return ""
	}
	if v, ok := d.vals[i].(string); ok {
		return v
	}
	d.fail(i, name, "string")
	return ""
}
