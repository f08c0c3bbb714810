package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// envSection says when and where the run was made, from the lines each
// pass printed (cmd/benchtable's input is the whole make bench output).
func envSection(r *results) string {
	var b strings.Builder
	dates := r.env["date"]
	if len(dates) > 0 {
		fmt.Fprintf(&b, "- Passes began %s to %s (UTC)", dates[0], dates[len(dates)-1])
		if start, end := r.env["start"], r.env["end"]; len(start) > 0 && len(end) > 0 {
			t0, err0 := time.Parse(time.RFC3339, start[0])
			t1, err1 := time.Parse(time.RFC3339, end[len(end)-1])
			if err0 == nil && err1 == nil {
				fmt.Fprintf(&b, "; `make bench` took %.1f minutes", t1.Sub(t0).Minutes())
			}
		}
		b.WriteString(".\n")
	}
	if loads := r.env["loadavg"]; len(loads) > 0 {
		var one []float64
		for _, l := range loads {
			var x float64
			fmt.Sscan(l, &x)
			one = append(one, x)
		}
		fmt.Fprintf(&b, "- Load average as each of the %d processes began (1, 5, 15 min): %s; the 1-minute figure ranged %.2f to %.2f",
			len(loads), strings.Join(loads, "; "), slices.Min(one), slices.Max(one))
		if cores := r.cores(); len(cores) > 0 {
			s := "s"
			if len(cores) == 1 && cores[0] == "1" {
				s = ""
			}
			fmt.Fprintf(&b, "; the benchmark's client and server share %s core%s", strings.Join(cores, " or "), s)
		}
		b.WriteString(".\n")
	}
	var versions []string
	if v := r.env["redis"]; len(v) > 0 {
		versions = append(versions, "Redis "+v[0]+" (its own process, loopback, no persistence)")
	}
	if v := r.env["go"]; len(v) > 0 {
		versions = append(versions, strings.Replace(v[0], "gomaxprocs=", "GOMAXPROCS ", 1))
	}
	if v := r.env["cpu"]; len(v) > 0 {
		versions = append(versions, "CPU: "+v[0])
	}
	if len(versions) > 0 {
		fmt.Fprintf(&b, "- %s.\n", strings.Join(versions, "; "))
	}
	return b.String()
}

// cores are the distinct GOMAXPROCS values of the bench-env go lines
// (go=VERSION gomaxprocs=N), in the order seen.
func (r *results) cores() []string {
	var out []string
	for _, v := range r.env["go"] {
		for _, f := range strings.Fields(v) {
			if n, ok := strings.CutPrefix(f, "gomaxprocs="); ok && n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// summarySection is decisions/s as a multiple of the floor's in the same
// group, every row at every scenario and caller count.
func summarySection(r *results) string {
	scenarios, gs := r.groups()
	var b strings.Builder
	b.WriteString("| impl |")
	for _, s := range scenarios {
		for _, g := range gs {
			fmt.Fprintf(&b, " %s g=%d |", s, g)
		}
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(scenarios)*len(gs)) + "\n")
	var all []string
	for _, s := range scenarios {
		for _, g := range gs {
			for _, impl := range r.impls(s, g) {
				if !slices.Contains(all, impl) {
					all = append(all, impl)
				}
			}
		}
	}
	for _, impl := range sortBy(all, implOrder) {
		fmt.Fprintf(&b, "| %s |", impl)
		for _, s := range scenarios {
			for _, g := range gs {
				if x, ok := r.vsFloor(s, g, impl); ok {
					fmt.Fprintf(&b, " %s |", ratio(x))
				} else {
					b.WriteString(" – |")
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// vsFloor is impl's decisions/s divided by the unpipelined floor's.
func (r *results) vsFloor(scenario string, g int, impl string) (float64, bool) {
	v, ok1 := r.perSecond(scenario, g, impl)
	f, ok2 := r.perSecond(scenario, g, "floor")
	return v / f, ok1 && ok2
}

// ratio is x with two decimals, or none from 10 up.
func ratio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// decisionColumns are the detailed tables' columns after the row name.
var decisionColumns = []struct {
	title, unit, format string
}{
	{"decisions/s", "", ""},
	{"÷ floor", "", ""},
	{"p50 µs", "p50-us", "latency"},
	{"p99 µs", "p99-us", "latency"},
	{"Redis µs in commands", "srv-cmd-us/op", "%.1f"},
	{"Redis CPU µs", "srv-cpu-us/op", "%.1f"},
	{"client CPU µs", "cli-cpu-us/op", "%.1f"},
	{"commands", "cmds/op", "%.2f"},
	{"allocs", "allocs/op", "%.0f"},
	{"bytes", "B/op", "%.0f"},
	{"errors", "errs/op", "%.4f"},
	{"cached", "cached/op", "%.3f"},
}

// decisionSection is one table per scenario and caller count.
func decisionSection(r *results) string {
	scenarios, gs := r.groups()
	var b strings.Builder
	for _, s := range scenarios {
		for _, g := range gs {
			impls := r.impls(s, g)
			if len(impls) == 0 {
				continue
			}
			n := r.passes(row{s, g, impls[0]})
			fmt.Fprintf(&b, "\n#### %s, %d goroutine%s (median of %d)\n\n| impl |", s, g, plural(g), n)
			for _, c := range decisionColumns {
				fmt.Fprintf(&b, " %s |", c.title)
			}
			b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(decisionColumns)) + "\n")
			for _, impl := range impls {
				fmt.Fprintf(&b, "| %s |", impl)
				for _, c := range decisionColumns {
					var cell string
					switch c.title {
					case "decisions/s":
						if v, ok := r.perSecond(s, g, impl); ok {
							cell = fmt.Sprintf("%.0f", v)
						}
					case "÷ floor":
						if v, ok := r.vsFloor(s, g, impl); ok {
							cell = ratio(v)
						}
					case "p50 µs", "p99 µs":
						// A cached denial takes a fraction of a µs.
						if v, ok := r.get(s, g, impl, c.unit); ok && v < 10 {
							cell = fmt.Sprintf("%.2f", v)
						} else if ok {
							cell = fmt.Sprintf("%.0f", v)
						}
					default:
						if v, ok := r.get(s, g, impl, c.unit); ok {
							cell = fmt.Sprintf(c.format, v)
						}
					}
					if cell == "" {
						cell = "–"
					}
					fmt.Fprintf(&b, " %s |", cell)
				}
				b.WriteString("\n")
			}
		}
	}
	return strings.TrimPrefix(b.String(), "\n")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// memorySection is the memory benchmark's table, with each row's ratio to
// ulule's (the smallest state among the peers).
func memorySection(r *results) string {
	var impls []string
	for impl := range r.memory {
		impls = append(impls, impl)
	}
	impls = sortBy(impls, implOrder)
	ulule, _ := median(r.memory["ulule_limiter"]["info-B/key"])
	var b strings.Builder
	b.WriteString("| impl | INFO memory delta B/key | ÷ ulule | MEMORY USAGE B/key |\n| --- | ---: | ---: | ---: |\n")
	for _, impl := range impls {
		info, _ := median(r.memory[impl]["info-B/key"])
		usage, _ := median(r.memory[impl]["usage-B/key"])
		cmp := "–"
		if ulule > 0 {
			cmp = fmt.Sprintf("%.2f", info/ulule)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.1f |\n", impl, info, cmp, usage)
	}
	return b.String()
}

// anatomySection is TestAnatomy's table: each script call's µs inside
// Redis (median over the rounds) and its multiple of return 1's.
func anatomySection(r *results) string {
	if len(r.anatomyRows) == 0 {
		return "(no TestAnatomy rows in this run)\n"
	}
	floor, _ := median(r.anatomy["return 1"])
	var b strings.Builder
	b.WriteString("| script call | µs in Redis | ÷ return 1 | rounds |\n| --- | ---: | ---: | ---: |\n")
	for _, name := range r.anatomyRows {
		v, _ := median(r.anatomy[name])
		cmp := "–"
		if floor > 0 {
			cmp = fmt.Sprintf("%.1f×", v/floor)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %d |\n", name, v, cmp, len(r.anatomy[name]))
	}
	return b.String()
}

// accuracySection is the accuracy test's table: median [min, max] over
// the rounds of each limiter and clock.
func accuracySection(r *results) string {
	type key struct{ limiter, clock string }
	var keys []key
	rounds := map[key][]accuracyRound{}
	for _, a := range r.accuracy {
		k := key{a.limiter, a.clock}
		if rounds[k] == nil {
			keys = append(keys, k)
		}
		rounds[k] = append(rounds[k], a)
	}
	var b strings.Builder
	b.WriteString("| limiter | clock | calls | admitted | allowed | admitted / allowed | errors |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range keys {
		rs := rounds[k]
		col := func(f func(accuracyRound) float64, format string) string {
			var v []float64
			for _, a := range rs {
				v = append(v, f(a))
			}
			m, _ := median(v)
			if len(v) == 1 {
				return fmt.Sprintf(format, m)
			}
			return fmt.Sprintf(format+" ["+format+", "+format+"]", m, slices.Min(v), slices.Max(v))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", k.limiter, k.clock,
			col(func(a accuracyRound) float64 { return a.calls }, "%.0f"),
			col(func(a accuracyRound) float64 { return a.admitted }, "%.0f"),
			col(func(a accuracyRound) float64 { return a.allowed }, "%.0f"),
			col(func(a accuracyRound) float64 { return a.admitted / a.allowed }, "%.3f"),
			col(func(a accuracyRound) float64 { return 100 * a.errors / math.Max(a.calls, 1) }, "%.1f%%"))
	}
	return b.String()
}
