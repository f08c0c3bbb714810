package main

import (
	"fmt"
	"slices"
	"strings"
)

// outboundOrder is TestOutbound's recipes in table order, and what each
// is; recipes beyond it come last, in name order.
var outboundOrder = []struct{ row, what string }{
	{"log_1s_50ms", "`SlidingWindowLog`, N per 1 s + 50 ms: the recipe"},
	{"log_1s_20ms", "`SlidingWindowLog`, N per 1 s + 20 ms"},
	{"log_1s", "`SlidingWindowLog`, N per 1 s (no margin)"},
	{"gcra_burst5", "GCRA, `PerSecond(N).WithBurst(5)` (the background job's recipe)"},
	{"gcra_default", "GCRA, `PerSecond(N)` (a burst of N)"},
	{"gcra_burst1", "GCRA, `PerSecond(N).WithBurst(1)` (paced)"},
}

// outboundRecipe is the row of the recipe docs/recipes.md gives.
const outboundRecipe = "log_1s_50ms"

// outboundSection is TestOutbound's table: each recipe's rate over the
// rounds (median [min, max]), its worst second in any round (more than N is
// what a third party refuses), and medians of the rest.
func outboundSection(r *results) string {
	if len(r.outboundRows) == 0 {
		return "(no TestOutbound rows in this run)\n"
	}
	var order, whats []string
	for _, o := range outboundOrder {
		order, whats = append(order, o.row), append(whats, o.what)
	}
	var b strings.Builder
	b.WriteString("| recipe | what | N | calls a second | ÷ N | most calls in one second, worst round | calls made 50 ms or more after their command was sent | decisions per call | rounds |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, row := range sortBy(r.outboundRows, order) {
		m := r.outbound[row]
		what := "–"
		if i := slices.Index(order, row); i >= 0 {
			what = whats[i]
		}
		n, _ := median(m["n"])
		rate, _ := median(m["rate"])
		late, _ := median(m["late"])
		dec, _ := median(m["decisions"])
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %.3f | %.0f | %.0f | %.2f | %d |\n", row, what, n,
			spread(m["rate"], "%.1f"), rate/n, slices.Max(m["worst"]), late, dec, len(m["rate"]))
	}
	return b.String()
}

// spread is the median of v, with its range when there are several.
func spread(v []float64, format string) string {
	m, ok := median(v)
	if !ok {
		return "–"
	}
	if len(v) == 1 {
		return fmt.Sprintf(format, m)
	}
	return fmt.Sprintf(format+" ["+format+", "+format+"]", m, slices.Min(v), slices.Max(v))
}
