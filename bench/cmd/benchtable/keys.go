package main

import (
	"fmt"
	"strings"
)

// keyClients are the clients of the distinct-key table: each redlimit
// row's suffix, and the name the table gives it.
var keyClients = []struct{ suffix, name string }{{"", "go-redis"}, {"_rueidis", "rueidis"}, {"_valkey", "valkey-go"}}

// keysG is the caller count the distinct-key table and its targets read.
const keysG = 64

// keyRow is a row of the distinct-key table: its name, its client, and
// for a batched redlimit row the name of its twin without batching.
type keyRow struct{ impl, client, nobatch string }

// keyRows are the distinct-key table's rows in order: the floors, each
// algorithm over each client beside its row without batching, the peers.
func keyRows() []keyRow {
	out := []keyRow{{"floor", "go-redis", ""}, {"floor_rueidis", "rueidis", ""}, {"floor_valkey", "valkey-go", ""}}
	for _, c := range keyClients {
		for _, a := range algorithms {
			out = append(out,
				keyRow{"redlimit_" + a + c.suffix, c.name, "redlimit_" + a + "_nobatch" + c.suffix},
				keyRow{"redlimit_" + a + "_nobatch" + c.suffix, c.name, ""})
		}
	}
	return append(out, keyRow{"redis_rate", "go-redis", ""}, keyRow{"ulule_limiter", "go-redis", ""})
}

// keysSection is the distinct scenario at 64 goroutines as cross-key
// batching is judged: each row's decisions/s against ulule's and against
// its own row without batching (ratelimit.WithoutCoalescing), the Redis
// CPU and Go allocations per decision; then the HTTP rows from 100 000
// client addresses.
func keysSection(r *results) string {
	var b strings.Builder
	rows := keyRows()
	n := 0
	for _, k := range rows {
		n = max(n, r.passes(row{"distinct", keysG, k.impl}))
	}
	if n == 0 {
		b.WriteString("(no distinct rows at 64 goroutines in this run)\n")
	} else {
		fmt.Fprintf(&b, "#### distinct, %d goroutines (median of %d)\n\n", keysG, n)
		b.WriteString("| impl | client | decisions/s | ÷ ulule | ÷ without batching | Redis CPU µs | bytes | allocs | passes |\n")
		b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		ulule, uok := r.perSecond("distinct", keysG, "ulule_limiter")
		for _, k := range rows {
			v, ok := r.perSecond("distinct", keysG, k.impl)
			if !ok {
				continue
			}
			vsUlule, vsNobatch := "–", "–"
			if uok {
				vsUlule = ratio(v / ulule)
			}
			if k.nobatch != "" {
				if w, ok := r.perSecond("distinct", keysG, k.nobatch); ok {
					vsNobatch = ratio(v / w)
				}
			}
			cell := func(unit, format string) string {
				if x, ok := r.get("distinct", keysG, k.impl, unit); ok {
					return fmt.Sprintf(format, x)
				}
				return "–"
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %d |\n", k.impl, k.client, v, vsUlule, vsNobatch,
				cell("srv-cpu-us/op", "%.1f"), cell("B/op", "%.0f"), cell("allocs/op", "%.0f"), r.passes(row{"distinct", keysG, k.impl}))
		}
	}
	var ips []string
	for _, name := range r.httpRows {
		if strings.Contains(name, "_ips") {
			ips = append(ips, name)
		}
	}
	if len(ips) == 0 {
		b.WriteString("\n(no HTTP rows from 100 000 client addresses in this run)\n")
		return b.String()
	}
	b.WriteString("\n#### HTTP, 100 000 client addresses through X-Forwarded-For (median of the rounds)\n\n")
	b.WriteString(httpTable(r, ips))
	return b.String()
}
