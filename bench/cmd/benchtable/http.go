package main

import (
	"fmt"
	"strings"
)

// httpOrder is the HTTP rows' table order (TestHTTP runs them in a random
// order each round); rows beyond it come last, in name order.
var httpOrder = []string{"bare", "ulule", "redlimit", "redlimit_ap", "redlimit_rueidis", "ulule_deny", "redlimit_deny", "redlimit_cache_deny",
	"bare_ips", "ulule_ips", "redlimit_ips", "redlimit_ips_nobatch"}

// httpMedian is an HTTP row's median of a metric over the rounds.
func (r *results) httpMedian(row, metric string) (float64, bool) {
	return median(r.http[row][metric])
}

// httpPeer is the row an HTTP row is compared with: ulule under the same
// load (ulule_deny for the deny rows, ulule_ips for those from 100 000
// addresses).
func httpPeer(row string) string {
	switch {
	case strings.HasSuffix(row, "_deny"):
		return "ulule_deny"
	case strings.Contains(row, "_ips"):
		return "ulule_ips"
	}
	return "ulule"
}

// httpBare is the bare handler under the same load as row.
func httpBare(row string) string {
	if strings.Contains(row, "_ips") {
		return "bare_ips"
	}
	return "bare"
}

// httpSection is TestHTTP's table: medians over the rounds, and requests/s
// as multiples of the bare handler's and ulule's under the same load.
func httpSection(r *results) string { return httpTable(r, r.httpRows) }

// httpTable is httpSection's table of the given rows.
func httpTable(r *results, rows []string) string {
	var b strings.Builder
	b.WriteString("| handler | requests/s | ÷ bare | ÷ ulule | p50 µs | p99 µs | Redis CPU µs per request | denied | rounds |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, row := range sortBy(rows, httpOrder) {
		rps, _ := r.httpMedian(row, "rps")
		vsBare, vsPeer := "–", "–"
		if bare, _ := r.httpMedian(httpBare(row), "rps"); bare > 0 {
			vsBare = ratio(rps / bare)
		}
		if p, ok := r.httpMedian(httpPeer(row), "rps"); ok && p > 0 && row != httpBare(row) {
			vsPeer = ratio(rps / p)
		}
		p50, _ := r.httpMedian(row, "p50-us")
		p99, _ := r.httpMedian(row, "p99-us")
		cpu, _ := r.httpMedian(row, "srv-cpu-us/req")
		var denied []float64
		for i, n := range r.http[row]["requests"] {
			if n > 0 {
				denied = append(denied, r.http[row]["non2xx"][i]/n)
			}
		}
		d, _ := median(denied)
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f | %.0f | %.2f | %.3f | %d |\n", row, rps, vsBare, vsPeer, p50, p99, cpu, d, len(r.http[row]["rps"]))
	}
	return b.String()
}
