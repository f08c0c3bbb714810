package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// chartCallers is the caller count the chart shows.
const chartCallers = 64

var colors = map[string]string{
	"floor":        "#555555",
	"ours":         "#1f77b4",
	"ours_ap":      "#17becf",
	"ours_rueidis": "#9467bd",
	"ours_cache":   "#2ca02c",
	"bindings":     "#ff7f0e",
	"peer":         "#b0b0b0",
}

var legend = []struct{ kind, label string }{
	{"floor", "EVALSHA return 1 (floor)"},
	{"ours", "redlimit"},
	{"ours_ap", "redlimit, AutoPipeline"},
	{"ours_rueidis", "redlimit, rueidis / valkey-go"},
	{"ours_cache", "redlimit, deny cache"},
	{"bindings", "rueidis / valkey-go bindings"},
	{"peer", "peers"},
}

// chart draws decisions/s as a multiple of the unpipelined floor's, one
// panel per scenario, one bar per row, on a log scale: the deny cache's
// multiples and the peers' fractions both fit.
func chart(r *results) string {
	scenarios, _ := r.groups()
	var impls []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range scenarios {
		for _, impl := range r.impls(s, chartCallers) {
			if !slices.Contains(impls, impl) {
				impls = append(impls, impl)
			}
			if v, ok := r.vsFloor(s, chartCallers, impl); ok && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	impls = sortBy(impls, implOrder)
	if len(impls) == 0 {
		return ""
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Min(lo, 1))))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, 1)*1.0001)))

	const (
		labelW, panelW, gap = 230.0, 250.0, 44.0
		top, rowH, bottom   = 78.0, 17.0, 56.0
	)
	width := labelW + float64(len(scenarios))*(panelW+gap)
	decisionsH := top + float64(len(impls))*rowH + 24
	height := decisionsH + httpHeight(r, rowH) + bottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	date := ""
	if d := r.env["date"]; len(d) > 0 && d[0] != "" {
		// The day of an RFC 3339 date; a shorter value whole.
		date = ", run of " + d[0][:min(10, len(d[0]))]
	}
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">Decisions per second as a multiple of the EVALSHA "return 1" floor, %d goroutines</text>`+"\n", chartCallers)
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#444">Log scale; bars run from 1×, Redis's floor for one unpipelined script call (the line): right is faster. Medians of make bench%s (BENCHMARKS.md).</text>`+"\n", html.EscapeString(date))

	x := func(v float64) float64 {
		return (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo)) * panelW
	}
	for i, impl := range impls {
		y := top + float64(i)*rowH
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", labelW-8, y+12, html.EscapeString(impl))
	}
	for p, s := range scenarios {
		x0 := labelW + float64(p)*(panelW+gap)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x0+panelW/2, top-14, html.EscapeString(s))
		// Decades, labelled, and faint lines at the 3s between them.
		for d := lo; d <= hi*1.0001; d *= 10 {
			for _, m := range []float64{1, 3} {
				v := d * m
				if v > hi*1.0001 {
					continue
				}
				xx := x0 + x(v)
				stroke := "#ececec"
				if m == 1 {
					stroke = "#cccccc"
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#666">%s</text>`+"\n", xx, top+float64(len(impls))*rowH+14, tick(v))
				}
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", xx, top-4, xx, top+float64(len(impls))*rowH, stroke)
			}
		}
		for i, impl := range impls {
			v, ok := r.vsFloor(s, chartCallers, impl)
			if !ok || v <= 0 {
				continue
			}
			// A bar runs from the floor's 1× to the row's multiple, right
			// when it is faster than the floor and left when it is slower.
			y := top + float64(i)*rowH
			from, to := math.Min(x(1), x(v)), math.Max(x(1), x(v))
			w := math.Max(to-from, 1)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s, %s: %s the floor</title></rect>`+"\n",
				x0+from, y+2, w, rowH-4, colors[kind(impl)], html.EscapeString(impl), html.EscapeString(s), ratio(v))
			if v >= 1 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#222" font-size="10">%s</text>`+"\n", x0+to+3, y+12, ratio(v))
			} else {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#222" font-size="10" text-anchor="end">%s</text>`+"\n", x0+from-3, y+12, ratio(v))
			}
		}
		one := x0 + x(1)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.1f" stroke="#000" stroke-width="1.5"/>`+"\n", one, top-4, one, top+float64(len(impls))*rowH)
	}
	httpPanel(&b, r, decisionsH, labelW, math.Min(2*panelW, width-labelW-170), rowH)
	ly := height - 22
	lx := 10.0
	for _, l := range legend {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n", lx, ly-10, colors[l.kind], lx+16, ly, html.EscapeString(l.label))
		lx += 30 + 6.2*float64(len(l.label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func tick(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(v, 'f', 0, 64) + "×"
	}
	return strconv.FormatFloat(v, 'g', 2, 64) + "×"
}

// httpKind is how the chart colours an HTTP row.
func httpKind(row string) string {
	switch {
	case row == "bare":
		return "floor"
	case strings.HasPrefix(row, "ulule"):
		return "peer"
	case strings.Contains(row, "cache"):
		return "ours_cache"
	case strings.HasSuffix(row, "_ap"):
		return "ours_ap"
	case strings.Contains(row, "rueidis"):
		return "ours_rueidis"
	}
	return "ours"
}

func httpHeight(r *results, rowH float64) float64 {
	if len(r.httpRows) == 0 {
		return 0
	}
	return 40 + float64(len(r.httpRows))*rowH
}

// httpPanel draws TestHTTP's requests/s as a share of the bare handler's,
// on a linear scale from 0, below the decision panels.
func httpPanel(b *strings.Builder, r *results, y0, labelW, w, rowH float64) {
	bare, ok := r.httpMedian("bare", "rps")
	if len(r.httpRows) == 0 || !ok || bare <= 0 {
		return
	}
	top := y0 + 30
	fmt.Fprintf(b, `<text x="10" y="%.0f" font-size="14" font-weight="bold">Behind a hello-world net/http handler (wrk, 64 connections): requests per second as a share of the bare handler's</text>`+"\n", y0+12)
	hi := 1.0
	for _, row := range r.httpRows {
		if v, ok := r.httpMedian(row, "rps"); ok {
			hi = math.Max(hi, v/bare)
		}
	}
	for _, m := range []float64{0, 0.25, 0.5, 0.75, 1} {
		xx := labelW + m/hi*w
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", xx, top-4, xx, top+float64(len(r.httpRows))*rowH)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#666">%s</text>`+"\n", xx, top+float64(len(r.httpRows))*rowH+14, strconv.FormatFloat(m, 'f', -1, 64)+"×")
	}
	for i, row := range sortBy(r.httpRows, httpOrder) {
		v, ok := r.httpMedian(row, "rps")
		if !ok {
			continue
		}
		y := top + float64(i)*rowH
		label := fmt.Sprintf("%.0f/s", v)
		if p, ok := r.httpMedian(httpPeer(row), "rps"); ok && p > 0 && row != "bare" && !strings.HasPrefix(row, "ulule") {
			label += fmt.Sprintf(", %s ulule's", ratio(v/p))
		}
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", labelW-8, y+12, html.EscapeString(row))
		bw := math.Max(v/bare/hi*w, 1)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s: %.0f requests/s</title></rect>`+"\n", labelW, y+2, bw, rowH-4, colors[httpKind(row)], html.EscapeString(row), v)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#222" font-size="10">%s</text>`+"\n", labelW+bw+3, y+12, html.EscapeString(label))
	}
}
