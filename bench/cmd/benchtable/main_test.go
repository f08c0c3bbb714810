package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func load(t *testing.T) *results {
	t.Helper()
	f, err := os.Open("testdata/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Medians over the passes, and decisions/s against the floor's.
func TestMedians(t *testing.T) {
	r := load(t)
	if got, _ := r.get("hot-deny", 64, "redlimit_gcra", "srv-cmd-us/op"); got != 4 {
		t.Errorf("median command time %v, want 4", got)
	}
	if got, _ := r.vsFloor("hot-deny", 64, "redlimit_gcra_cache"); got != 1e9/2000/(1e9/21000) {
		t.Errorf("cache vs floor %v", got)
	}
	if got := r.passes(row{"hot-deny", 64, "floor"}); got != 2 {
		t.Errorf("%d passes", got)
	}
}

// Every verdict follows from the numbers: met at the bound, missed past it
// with by how much.
func TestTargets(t *testing.T) {
	got := map[string]string{}
	for _, c := range targets(load(t)) {
		v := "met"
		if !c.met {
			v = c.miss
		}
		got[c.target+" / "+c.setting] = c.got + " " + v
	}
	want := map[string]string{
		"Redis CPU per decision over a pipelining client: GCRA and token bucket ≤ 6 µs / hot-deny, gcra_ap":            "5.5 µs met",
		"Redis CPU per decision over a pipelining client: GCRA and token bucket ≤ 6 µs / hot-deny, gcra_rueidis":       "7.0 µs 17% over",
		"Redis CPU per decision unpipelined: every script ≤ ulule's / hot-deny, worst: gcra":                           "9.0 µs 12% over",
		"decisions/s unpipelined: GCRA and fixed window ≥ ulule's / hot-deny, gcra":                                    "0.92× 8% short",
		"memory per key: GCRA ≤ 1.2× ulule's / gcra":                                                                   "130.0 B met",
		"memory per key: GCRA ≤ redis_rate's / gcra":                                                                   "130.0 B met",
		"over rueidis / valkey-go at 64 goroutines: ≥ 3× redis_rate's decisions/s / hot-deny, gcra_rueidis":            "3.12× met",
		"over rueidis / valkey-go at 64 goroutines: ≥ 3× redis_rate's decisions/s / hot-deny, gcra_valkey":             "2.78× 7% short",
		"over rueidis / valkey-go: p99 below redis_rate's / hot-deny, gcra_rueidis":                                    "900 µs met",
		"over rueidis / valkey-go: p99 below redis_rate's / hot-deny, gcra_valkey":                                     "3000 µs 50% over",
		"HTTP requests/s: ≥ 1.0× ulule's unpipelined / redlimit":                                                       "1.00× met",
		"HTTP requests/s: ≥ 2× ulule's pipelined / redlimit_ap":                                                        "2.05× met",
		"HTTP requests/s: ≥ 2× ulule's pipelined / redlimit_rueidis":                                                   "1.95× 2% short",
		"deny cache under a flood: ≥ 10× redis_rate's decisions/s / hot-deny, 64 goroutines, slowest: gcra":            "12× met",
		"100 000 distinct keys: ≥ 0.95× ratelimit GCRA without coalescing / distinct, gcra":                            "0.96× met",
		"Redis CPU per decision unpipelined: every script ≤ ulule's / hot-allow, worst: gcra":                          "2.0 µs met",
		"decisions/s unpipelined: GCRA and fixed window ≥ ulule's / hot-allow, gcra":                                   "3.50× met",
		"hot key, all admitted: p99 ≤ ulule's / hot-allow, gcra":                                                       "2000 µs met",
		"hot key, all admitted: ratelimit GCRA, default options, ≥ 3× ulule's decisions/s / hot-allow, gcra":           "3.50× met",
		"hot key: Redis CPU per decision ≤ 2 µs / hot-allow, gcra":                                                     "2.0 µs met",
		"no over-admission: every redlimit row of TestAccuracy, 64 goroutines on one key / 2 rounds":                   "0 over met",
		"one goroutine: p50 within 5% of ratelimit GCRA without coalescing / hot-deny, gcra":                           "52 µs met",
		"outbound recipe: at most N calls in any second, every round / log_1s_50ms":                                    "100 met",
		"outbound recipe: ≥ 0.95 N calls a second sustained / log_1s_50ms":                                             "0.98× met",
		"ratelimit over rueidis / valkey-go ≥ 0.9× the client's own generated bindings / hot-deny, gcra_rueidis":       "1.00× met",
		"ratelimit over rueidis / valkey-go ≥ 0.9× the client's own generated bindings / hot-deny, gcra_valkey":        "0.89× 1% short",
		"ratelimit over rueidis ≥ 1.1× ulule's decisions/s / hot-deny, gcra_rueidis":                                   "2.75× met",
		"deny cache: Redis commands per cached denial / hot-deny, 64 goroutines, most of six":                          "0 met",
		"Go allocations per decision ≤ redis_rate's / hot-deny, most: gcra at 64":                                      "10 met",
		"Go bytes per decision ≤ redis_rate's / hot-deny, most: gcra at 64":                                            "560 met",
		"100 000 distinct keys: ratelimit GCRA ≥ 2.5× ulule's decisions/s / distinct, gcra":                            "2.55× met",
		"100 000 distinct keys: Redis CPU per GCRA decision ≤ 3 µs / distinct, gcra":                                   "9.0 µs 200% over",
		"100 000 distinct keys: every algorithm ≥ 1.5× its own row without batching / distinct, go-redis, least: gcra": "0.96× 36% short",
		"HTTP from 100 000 client addresses (X-Forwarded-For): ≥ 2× ulule's requests/s / redlimit_ips":                 "2.09× met",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReplace(t *testing.T) {
	doc := []byte("a\n<!-- benchtable:x -->\nold\n<!-- /benchtable:x -->\nb\n")
	got, err := replace(doc, "x", "new")
	if err != nil || string(got) != "a\n<!-- benchtable:x -->\n\nnew\n<!-- /benchtable:x -->\nb\n" {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := replace(doc, "y", "new"); err == nil {
		t.Error("a missing marker is no error")
	}
}

func TestSections(t *testing.T) {
	r := load(t)
	if s := accuracySection(r); !strings.Contains(s, "| redlimit_gcra | server | 2000 [1000, 3000] | 200 [199, 200] | 201 [201, 201] | 0.993 [0.990, 0.995] | 0.0% [0.0%, 0.0%] |") ||
		!strings.Contains(s, "| ulule_limiter | server (TTL) | 1000 | 100 | 200 | 0.500 | 1.0% |") {
		t.Errorf("accuracy:\n%s", s)
	}
	if s := envSection(r); !strings.Contains(s, "took 12.5 minutes") || !strings.Contains(s, "ranged 0.50 to 0.70") ||
		!strings.Contains(s, "the benchmark's client and server share 4 cores.") || strings.Contains(s, "2 cores") {
		t.Errorf("env:\n%s", s)
	}
	if s := anatomySection(r); !strings.Contains(s, "| return 1 | 1.50 | 1.0× | 3 |") || !strings.Contains(s, "| gcra admits | 6.00 | 4.0× | 3 |") {
		t.Errorf("anatomy:\n%s", s)
	}
	if s := chart(r); strings.Count(s, "<rect x=") < 5 || !strings.HasSuffix(s, "</svg>\n") {
		t.Errorf("chart:\n%s", s)
	}
}

// A line parse cannot read is an error naming it, not a panic or a zero.
func TestParseErrors(t *testing.T) {
	for _, line := range []string{
		"BenchmarkMemory/impl=redlimit_gcra-2",
		"BenchmarkMemory/impl=redlimit_gcra-2 \t 1",
		"BenchmarkMemory/impl=redlimit_gcra-2 \t 1\t 4000000000",
		"BenchmarkMemory/impl= \t 1\t 4000000000 ns/op",
		"ACCURACY limiter=redlimit_gcra clock=server round=0 calls=1000 admitted=2O0 allowed=201 errors=0",
		"ACCURACY limiter=redlimit_gcra clock=server round=0 calls= admitted=200 allowed=201 errors=0",
		"OUTBOUND row=log_1s_50ms round=0 n=100 calls=500 rate=97.8 worst= late=2 decisions=1.50",
		"OUTBOUND round=0 n=100 calls=500 rate=97.8 worst=100 late=2 decisions=1.50",
	} {
		if _, err := parse(strings.NewReader(line + "\n")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", line)) {
			t.Errorf("parse(%q) error = %v, want one naming the line", line, err)
		}
	}
}

// A run whose cache never reported cmds/cached has not shown zero Redis
// commands per cached denial: that target is not met, and says why.
func TestTargetsWithoutCmdsCached(t *testing.T) {
	raw, err := os.ReadFile("testdata/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	in := strings.ReplaceAll(string(raw), "\t 0 cmds/cached", "")
	if in == string(raw) {
		t.Fatal("the fixture has no cmds/cached to drop")
	}
	r, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range targets(r) {
		if c.target != "deny cache: Redis commands per cached denial" {
			continue
		}
		found = true
		if c.met || !strings.Contains(c.miss, "not measured") {
			t.Errorf("%+v: want not met, not measured", c)
		}
	}
	if !found {
		t.Fatal("no cmds/cached target")
	}
	if s := targetsSection(r); !strings.Contains(s, "| deny cache: Redis commands per cached denial | hot-deny, 64 goroutines, most of six | – | 0 | **not measured") {
		t.Errorf("targets:\n%s", s)
	}
}

// A date line shorter than a day does not break the chart.
func TestChartShortDate(t *testing.T) {
	r := load(t)
	r.env["date"] = []string{"2026-12"}
	if s := chart(r); !strings.Contains(s, "make bench, run of 2026-12 (BENCHMARKS.md)") {
		t.Errorf("chart:\n%s", s)
	}
	r.env["date"] = []string{""}
	if s := chart(r); strings.Contains(s, "run of") || !strings.HasSuffix(s, "</svg>\n") {
		t.Errorf("chart:\n%s", s)
	}
}

func TestRatio(t *testing.T) {
	for x, want := range map[float64]string{0.875: "0.88×", 1: "1.00×", 9.994: "9.99×", 10: "10×", 123.4: "123×"} {
		if got := ratio(x); got != want {
			t.Errorf("ratio(%v) = %q, want %q", x, got, want)
		}
	}
}

// The core count comes from the run's go line, and a run without one
// claims none.
func TestEnvCores(t *testing.T) {
	r := load(t)
	r.env["go"] = []string{"go1.26.8 gomaxprocs=1"}
	if s := envSection(r); !strings.Contains(s, "share 1 core.") {
		t.Errorf("env:\n%s", s)
	}
	r.env["go"] = []string{"go1.26.8 gomaxprocs=2", "go1.26.8 gomaxprocs=8", "go1.26.8 gomaxprocs=2"}
	if s := envSection(r); !strings.Contains(s, "share 2 or 8 cores.") {
		t.Errorf("env:\n%s", s)
	}
	delete(r.env, "go")
	if s := envSection(r); strings.Contains(s, "core") || !strings.Contains(s, "ranged 0.50 to 0.70.\n") {
		t.Errorf("env:\n%s", s)
	}
}

// A raw output with a row missing is refused, naming the row, so no table
// is printed without it (nor left as the last run wrote it).
func TestComplete(t *testing.T) {
	raw, err := os.ReadFile("testdata/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := complete(load(t), allParts); err != nil {
		t.Fatalf("the fixture: %v", err)
	}
	for _, c := range []struct {
		drop, want string
	}{
		// One pass's result of a row that both passes announced.
		{"impl=redlimit_gcra_rueidis-2 \t 10000\t 7000", "decision scenario=hot-deny g=64 impl=redlimit_gcra_rueidis (1 of 2)"},
		{"BenchmarkMemory/impl=redis_rate-2", "memory impl=redis_rate (0 of 1)"},
		{"HTTP row=redlimit_ap round=2", "http row=redlimit_ap (1 of 2)"},
		{"HTTP ", "every result of TestHTTP"},
		{"ANATOMY ", "every result of TestAnatomy"},
		{"ACCURACY ", "every result of TestAccuracy"},
		{"OUTBOUND row=gcra_burst5 round=1", "outbound row=gcra_burst5 (1 of 2)"},
		{"OUTBOUND ", "every result of TestOutbound"},
		{"# bench-expect", `the "# bench-expect" lines`},
	} {
		var kept []string
		for _, line := range strings.Split(string(raw), "\n") {
			if !strings.Contains(line, c.drop) {
				kept = append(kept, line)
			}
		}
		r, err := parse(strings.NewReader(strings.Join(kept, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		if err := complete(r, allParts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("without %q: %v, want an error naming %q", c.drop, err, c.want)
		}
	}
}

// The HTTP table: medians of the rounds, each row against the bare
// handler and ulule.
func TestHTTPSection(t *testing.T) {
	s := httpSection(load(t))
	for _, want := range []string{
		"| bare | 55000 | 1.00× | – | 1500 | 9000 | 0.00 | 0.000 | 2 |",
		"| redlimit_ap | 43000 | 0.78× | 2.05× | 1500 | 9000 | 8.00 | 0.000 | 2 |",
		// From 100 000 addresses, against the bare handler and ulule
		// under the same load.
		"| bare_ips | 42000 | 1.00× | – | 1500 | 9000 | 0.00 | 0.000 | 2 |",
		"| redlimit_ips | 23000 | 0.55× | 2.09× | 2000 | 8000 | 6.00 | 0.000 | 2 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
}

// run writes nothing from an incomplete raw output.
func TestRunRefusesIncomplete(t *testing.T) {
	dir := t.TempDir()
	raw := dir + "/raw.txt"
	if err := os.WriteFile(raw, []byte("# bench-expect decision scenario=hot-deny g=64 impl=floor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := dir + "/B.md"
	if err := os.WriteFile(md, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(raw, md, dir+"/c.svg"); err == nil {
		t.Fatal("no error")
	}
	if got, _ := os.ReadFile(md); string(got) != "before\n" {
		t.Errorf("the Markdown file was rewritten: %q", got)
	}
	if _, err := os.Stat(dir + "/c.svg"); err == nil {
		t.Error("the chart was written")
	}
}

// Without the rows of ratelimit.WithoutCoalescing, the targets that compare
// with them say so instead of passing; an over-admitting redlimit row of
// TestAccuracy fails its target (a peer's does not count).
func TestTargetsNotMeasuredAndOverAdmitted(t *testing.T) {
	raw, err := os.ReadFile("testdata/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, "_nobatch") {
			kept = append(kept, line)
		}
	}
	in := strings.Replace(strings.Join(kept, "\n"), "calls=3000 admitted=199 allowed=201", "calls=3000 admitted=202 allowed=201", 1)
	r, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range targets(r) {
		got[c.target+" / "+c.setting] = fmt.Sprintf("%s %v %s", c.got, c.unmeasured, c.miss)
	}
	for k, want := range map[string]string{
		"100 000 distinct keys: ≥ 0.95× ratelimit GCRA without coalescing / distinct, gcra":               "– true not measured (no redlimit_gcra_nobatch row)",
		"one goroutine: p50 within 5% of ratelimit GCRA without coalescing / hot-deny, gcra":              "– true not measured (no redlimit_gcra_nobatch row)",
		"100 000 distinct keys: every algorithm ≥ 1.5× its own row without batching / distinct, go-redis": "– true not measured (no redlimit_gcra_nobatch)",
		"no over-admission: every redlimit row of TestAccuracy, 64 goroutines on one key / 2 rounds":      "1 over false over-admitted",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if s := targetsSection(r); !strings.Contains(s, "| distinct, gcra | – | ≥ 0.95× | **not measured (no redlimit_gcra_nobatch row)** |") {
		t.Errorf("targets:\n%s", s)
	}
}

// The outbound table: each recipe's rate over the rounds, its worst
// second in any round, and what each recipe is.
func TestOutboundSection(t *testing.T) {
	s := outboundSection(load(t))
	for _, want := range []string{
		"| log_1s_50ms | `SlidingWindowLog`, N per 1 s + 50 ms: the recipe | 100 | 97.7 [97.6, 97.8] | 0.977 | 100 | 1 | 1.45 | 2 |",
		"| gcra_burst5 | GCRA, `PerSecond(N).WithBurst(5)` (the background job's recipe) | 100 | 95.5 [95.0, 96.0] | 0.955 | 105 | 0 | 3.30 | 2 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if strings.Index(s, "| log_1s_50ms |") > strings.Index(s, "| gcra_burst5 |") {
		t.Errorf("the recipe is not first:\n%s", s)
	}
}

// The distinct-key table: each row against ulule and against its own row
// without batching; then the HTTP rows from 100 000 addresses alone.
func TestKeysSection(t *testing.T) {
	s := keysSection(load(t))
	for _, want := range []string{
		"#### distinct, 64 goroutines (median of 2)",
		"| redlimit_gcra | go-redis | 38462 | 2.55× | 0.96× | 9.0 | 560 | 10 | 2 |",
		"| redlimit_gcra_nobatch | go-redis | 40000 | 2.65× | – | 9.0 | 560 | 10 | 2 |",
		"| ulule_limiter | go-redis | 15083 | 1.00× | – | – | 460 | 16 | 2 |",
		"| redlimit_ips | 23000 | 0.55× | 2.09× |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "| redlimit_ap |") || strings.Contains(s, "hot-deny") {
		t.Errorf("rows of another load:\n%s", s)
	}
}

// -sections needs only the parts of the sections it prints: the keys
// table, the decision rows and the HTTP tier; the targets, nothing.
func TestPrintSectionsParts(t *testing.T) {
	raw, err := os.ReadFile("testdata/raw.txt")
	if err != nil {
		t.Fatal(err)
	}
	write := func(drop ...string) string {
		var kept []string
		for _, line := range strings.Split(string(raw), "\n") {
			if !slices.ContainsFunc(drop, func(d string) bool { return strings.HasPrefix(line, d) }) {
				kept = append(kept, line)
			}
		}
		name := t.TempDir() + "/raw.txt"
		if err := os.WriteFile(name, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	partial := write("BenchmarkMemory", "ACCURACY", "ANATOMY", "OUTBOUND", "# bench-expect memory", "# bench-expect outbound")
	if err := run(partial, "", ""); err == nil {
		t.Error("run took a raw output without memory, accuracy, anatomy and outbound")
	}
	if err := printSections(partial, []string{"keys", "targets"}); err != nil {
		t.Errorf("keys, targets: %v", err)
	}
	noHTTP := write("HTTP ", "# bench-expect http")
	if err := printSections(noHTTP, []string{"keys"}); err == nil || !strings.Contains(err.Error(), "every result of TestHTTP") {
		t.Errorf("keys without TestHTTP: %v", err)
	}
	if err := printSections(noHTTP, []string{"targets"}); err != nil {
		t.Errorf("targets without TestHTTP: %v", err)
	}
	if err := printSections(partial, []string{"nosuch"}); err == nil {
		t.Error("an unknown section is no error")
	}
}
