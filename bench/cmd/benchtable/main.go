// Command benchtable reads the output of `go test -bench Decision -count N`
// in this module and prints, as Markdown, the median of each metric for
// every limiter, with each peer's ratio to the redlimit script of the same
// algorithm (peer median / redlimit median: above 1 means the peer costs
// more).
//
//	go run ./cmd/benchtable new.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// base names, for each peer, the redlimit script it is compared with, and
// for each script called through the Functions library, the same script
// through EVALSHA.
var base = map[string]string{
	"redlimit_token_bucket_fcall": "redlimit_token_bucket",
	"redlimit_gcra_fcall":         "redlimit_gcra",
	"redis_rate":                  "redlimit_gcra",
	"throttled":                   "redlimit_gcra",
	"ulule_limiter":               "redlimit_fixed_window",
	"redis_docs_token_bucket":     "redlimit_token_bucket",
}

// implOrder is the order of the rows; the benchmarks start each group at a
// random limiter.
var implOrder = []string{
	"redlimit_token_bucket", "redlimit_gcra", "redlimit_leaky_bucket",
	"redlimit_fixed_window", "redlimit_sliding_window_log", "redlimit_sliding_window_counter",
	"redlimit_token_bucket_fcall", "redlimit_gcra_fcall",
	"redis_rate", "throttled", "ulule_limiter", "redis_docs_token_bucket",
}

var metrics = []struct{ unit, title string }{
	{"ns/op", "client ns/op"},
	{"srv-cmd-us/op", "server µs/op in commands"},
	{"srv-cpu-us/op", "server CPU µs/op"},
	{"errs/op", "errors/op"},
}

type row struct{ keys, mode, impl string }

func main() {
	in := io.Reader(os.Stdin)
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	samples := map[row]map[string][]float64{}
	var order []row
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkDecision/") {
			continue
		}
		r, ok := parseName(fields[0])
		if !ok {
			continue
		}
		if samples[r] == nil {
			samples[r] = map[string][]float64{}
			order = append(order, r)
		}
		// fields[1] is the iteration count; then value, unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err == nil {
				samples[r][fields[i+1]] = append(samples[r][fields[i+1]], v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rank := func(impl string) int {
		if i := slices.Index(implOrder, impl); i >= 0 {
			return i
		}
		return len(implOrder)
	}
	slices.SortStableFunc(order, func(a, b row) int { return rank(a.impl) - rank(b.impl) })
	med := func(r row, unit string) (float64, int, bool) {
		v := slices.Clone(samples[r][unit])
		if len(v) == 0 {
			return 0, 0, false
		}
		slices.Sort(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2], n, true
		}
		return (v[n/2-1] + v[n/2]) / 2, n, true
	}
	var groups []row
	for _, r := range order {
		g := row{keys: r.keys, mode: r.mode}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		fmt.Printf("\n### keys=%s, mode=%s\n\n", g.keys, g.mode)
		fmt.Print("| impl | n |")
		for _, m := range metrics {
			fmt.Printf(" %s |", m.title)
		}
		fmt.Print("\n| --- | ---: |")
		for range metrics {
			fmt.Print(" ---: |")
		}
		fmt.Println()
		for _, r := range order {
			if r.keys != g.keys || r.mode != g.mode {
				continue
			}
			_, n, _ := med(r, "ns/op")
			fmt.Printf("| %s | %d |", r.impl, n)
			for _, m := range metrics {
				v, _, ok := med(r, m.unit)
				if !ok {
					fmt.Print(" – |")
					continue
				}
				cell := format(v, m.unit)
				if b, isPeer := base[r.impl]; isPeer && m.unit != "errs/op" {
					if bv, _, ok := med(row{r.keys, r.mode, b}, m.unit); ok && bv > 0 {
						cell += fmt.Sprintf(" (×%.2f)", v/bv)
					}
				}
				fmt.Printf(" %s |", cell)
			}
			fmt.Println()
		}
	}
}

// parseName reads BenchmarkDecision/keys=K/mode=M/impl=I-P.
func parseName(name string) (row, bool) {
	var r row
	for _, part := range strings.Split(name, "/")[1:] {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "keys":
			r.keys = v
		case "mode":
			r.mode = v
		case "impl":
			if i := strings.LastIndex(v, "-"); i > 0 {
				if _, err := strconv.Atoi(v[i+1:]); err == nil {
					v = v[:i]
				}
			}
			r.impl = v
		}
	}
	return r, r.keys != "" && r.mode != "" && r.impl != ""
}

func format(v float64, unit string) string {
	switch unit {
	case "ns/op":
		return fmt.Sprintf("%.0f", v)
	case "errs/op":
		return fmt.Sprintf("%.4f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}
