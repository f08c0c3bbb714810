package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// results is everything one raw output holds: the decision benchmarks'
// samples (one per pass), the memory benchmark's, the accuracy test's
// rounds, and the environment lines the passes printed.
type results struct {
	decision map[row]map[string][]float64
	memory   map[string]map[string][]float64
	accuracy []accuracyRound
	// anatomy holds TestAnatomy's µs per call of each row, one sample a
	// round; anatomyRows its rows in the order they first appear.
	anatomy     map[string][]float64
	anatomyRows []string
	env         map[string][]string // key -> every value seen, in order
	// http holds TestHTTP's metrics of each row, one sample a round;
	// httpRows its rows in the order they first appear.
	http     map[string]map[string][]float64
	httpRows []string
	// outbound holds TestOutbound's metrics of each recipe, one sample a
	// round; outboundRows its recipes in the order they first appear.
	outbound     map[string]map[string][]float64
	outboundRows []string
	// expect counts the "# bench-expect KIND k=v..." lines: each pass
	// announces every row it is about to run, so a row that a pass
	// announced and did not report (a crash, a filter, a failed run) is
	// missing, not silently left out of the tables (see complete).
	expect map[string]int
	// seen counts the results of each row, in the keys of expect.
	seen map[string]int
}

// row is one decision benchmark: BenchmarkDecision/scenario=S/g=G/impl=I,
// or BenchmarkAtomic's rows, named the same way.
type row struct {
	scenario string
	g        int
	impl     string
}

type accuracyRound struct {
	limiter, clock                   string
	calls, admitted, allowed, errors float64
}

func parse(in io.Reader) (*results, error) {
	r := &results{
		decision: map[row]map[string][]float64{},
		memory:   map[string]map[string][]float64{},
		anatomy:  map[string][]float64{},
		env:      map[string][]string{},
		http:     map[string]map[string][]float64{},
		outbound: map[string]map[string][]float64{},
		expect:   map[string]int{},
		seen:     map[string]int{},
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "# bench-expect "):
			r.expect[strings.TrimPrefix(line, "# bench-expect ")]++
		case strings.HasPrefix(line, "HTTP "):
			name, err := addRow(r.http, &r.httpRows, line, "HTTP ", httpMetrics)
			if err != nil {
				return nil, err
			}
			r.seen["http row="+name]++
		case strings.HasPrefix(line, "OUTBOUND "):
			name, err := addRow(r.outbound, &r.outboundRows, line, "OUTBOUND ", outboundMetrics)
			if err != nil {
				return nil, err
			}
			r.seen["outbound row="+name]++
		case strings.HasPrefix(line, "# bench-env "):
			k, v, _ := strings.Cut(strings.TrimPrefix(line, "# bench-env "), "=")
			r.env[k] = append(r.env[k], v)
		case strings.HasPrefix(line, "cpu: "):
			r.env["cpu"] = append(r.env["cpu"], strings.TrimSpace(strings.TrimPrefix(line, "cpu: ")))
		case strings.HasPrefix(line, "BenchmarkDecision/"), strings.HasPrefix(line, "BenchmarkAtomic/"):
			fields := strings.Fields(line)
			rw, ok := parseDecisionName(fields[0])
			if !ok || len(fields) < 4 {
				return nil, fmt.Errorf("cannot read %q", line)
			}
			if r.decision[rw] == nil {
				r.decision[rw] = map[string][]float64{}
			}
			addMetrics(r.decision[rw], fields[2:])
			r.seen[rw.expectKey()]++
		case strings.HasPrefix(line, "BenchmarkMemory/impl="):
			// Name, iterations, then at least one value and its unit.
			fields := strings.Fields(line)
			if len(fields) < 4 {
				return nil, fmt.Errorf("cannot read %q", line)
			}
			impl := trimProcs(strings.TrimPrefix(fields[0], "BenchmarkMemory/impl="))
			if impl == "" {
				return nil, fmt.Errorf("cannot read %q", line)
			}
			if r.memory[impl] == nil {
				r.memory[impl] = map[string][]float64{}
			}
			addMetrics(r.memory[impl], fields[2:])
			r.seen["memory impl="+impl]++
		case strings.HasPrefix(line, "ANATOMY "):
			// The row's name comes last and may hold spaces.
			fields, name, _ := strings.Cut(strings.TrimPrefix(line, "ANATOMY "), "row=")
			var usec float64
			for _, f := range strings.Fields(fields) {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					usec, _ = strconv.ParseFloat(v, 64)
				}
			}
			if name == "" || usec <= 0 {
				return nil, fmt.Errorf("cannot read %q", line)
			}
			if r.anatomy[name] == nil {
				r.anatomyRows = append(r.anatomyRows, name)
			}
			r.anatomy[name] = append(r.anatomy[name], usec)
		case strings.HasPrefix(line, "ACCURACY "):
			a := accuracyRound{}
			for _, f := range strings.Fields(strings.TrimPrefix(line, "ACCURACY ")) {
				k, v, _ := strings.Cut(f, "=")
				var n float64
				switch k {
				case "calls", "admitted", "allowed", "errors":
					var err error
					if n, err = strconv.ParseFloat(v, 64); err != nil {
						return nil, fmt.Errorf("cannot read %s in %q: %v", k, line, err)
					}
				}
				switch k {
				case "limiter":
					a.limiter = v
				case "clock":
					a.clock = strings.ReplaceAll(v, "_", " ")
				case "calls":
					a.calls = n
				case "admitted":
					a.admitted = n
				case "allowed":
					a.allowed = n
				case "errors":
					a.errors = n
				}
			}
			r.accuracy = append(r.accuracy, a)
		}
	}
	return r, sc.Err()
}

// addRow reads a line of "row=NAME" and key=value fields into rows, which
// must have every one of metrics, and returns the row's name.
func addRow(rows map[string]map[string][]float64, order *[]string, line, prefix string, metrics []string) (string, error) {
	m := map[string]string{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, prefix)) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	name := m["row"]
	if name == "" {
		return "", fmt.Errorf("cannot read %q", line)
	}
	values := make([]float64, len(metrics))
	for i, k := range metrics {
		v, err := strconv.ParseFloat(m[k], 64)
		if err != nil {
			return "", fmt.Errorf("cannot read %s in %q", k, line)
		}
		values[i] = v
	}
	if rows[name] == nil {
		rows[name] = map[string][]float64{}
		*order = append(*order, name)
	}
	for i, k := range metrics {
		rows[name][k] = append(rows[name][k], values[i])
	}
	return name, nil
}

// addMetrics reads value, unit pairs.
func addMetrics(m map[string][]float64, fields []string) {
	for i := 0; i+1 < len(fields); i += 2 {
		if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
			m[fields[i+1]] = append(m[fields[i+1]], v)
		}
	}
}

// httpMetrics are the numbers every HTTP line carries.
var httpMetrics = []string{"rps", "p50-us", "p99-us", "srv-cpu-us/req", "requests", "non2xx"}

// outboundMetrics are the numbers every OUTBOUND line carries.
var outboundMetrics = []string{"n", "calls", "rate", "worst", "late", "decisions"}

// expectKey is how the benchmarks announce the row (see results.expect).
func (rw row) expectKey() string {
	return fmt.Sprintf("decision scenario=%s g=%d impl=%s", rw.scenario, rw.g, rw.impl)
}

func parseDecisionName(name string) (row, bool) {
	var r row
	for _, part := range strings.Split(name, "/")[1:] {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "scenario":
			r.scenario = v
		case "g":
			r.g, _ = strconv.Atoi(v)
		case "impl":
			r.impl = trimProcs(v)
		}
	}
	return r, r.scenario != "" && r.g > 0 && r.impl != ""
}

// trimProcs drops the -GOMAXPROCS suffix of a benchmark name.
func trimProcs(s string) string {
	if i := strings.LastIndex(s, "-"); i > 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			return s[:i]
		}
	}
	return s
}

func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2], true
	}
	return (v[n/2-1] + v[n/2]) / 2, true
}

// get is a decision benchmark's median of unit.
func (r *results) get(scenario string, g int, impl, unit string) (float64, bool) {
	return median(r.decision[row{scenario, g, impl}][unit])
}

// perSecond is a decision benchmark's median decisions per second.
func (r *results) perSecond(scenario string, g int, impl string) (float64, bool) {
	ns, ok := r.get(scenario, g, impl, "ns/op")
	if !ok || ns <= 0 {
		return 0, false
	}
	return 1e9 / ns, true
}

// passes is how many samples a decision benchmark has.
func (r *results) passes(rw row) int { return len(r.decision[rw]["ns/op"]) }
