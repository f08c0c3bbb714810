package main

import (
	"slices"
	"strings"
)

// scenarioOrder and algorithms fix the order of columns and rows; rows the
// raw output has beyond these come last, in name order.
var scenarioOrder = []string{"hot-allow", "hot-deny", "distinct"}

var algorithms = []string{"token_bucket", "gcra", "leaky_bucket", "fixed_window", "sliding_window_log", "sliding_window_counter"}

var peerNames = []string{"redis_rate", "ulule_limiter", "throttled", "redis_docs_token_bucket"}

// implOrder is every row name in table order: the floors, redlimit's
// scripts plain (each with its row without batching), over the
// AutoPipeliner, over rueidis (with the rows without batching) and with
// the deny cache, over valkey-go, GCRA through the rueidis and valkey-go
// bindings, two through the Functions library, several limits and a lease
// (BenchmarkAtomic), then the peers.
var implOrder = func() []string {
	out := []string{"floor", "floor_ap", "floor_rueidis", "floor_rueidis_native", "floor_valkey"}
	for _, suffix := range []string{"", "_ap", "_rueidis", "_cache"} {
		for _, a := range algorithms {
			out = append(out, "redlimit_"+a+suffix)
			switch suffix {
			case "":
				out = append(out, "redlimit_"+a+"_nobatch")
			case "_rueidis":
				out = append(out, "redlimit_"+a+"_nobatch_rueidis")
				if a == "gcra" {
					out = append(out, "redlimit_gcra_flush20us_rueidis")
				}
			}
		}
	}
	for _, a := range algorithms {
		out = append(out, "redlimit_"+a+"_valkey", "redlimit_"+a+"_nobatch_valkey")
	}
	out = append(out, "bindings_gcra_rueidis", "bindings_gcra_valkey")
	out = append(out, "redlimit_token_bucket_fcall", "redlimit_gcra_fcall",
		"redlimit_multi_2", "redlimit_allowall_2", "redlimit_multi_4", "redlimit_lease")
	return append(append(out, peerNames...), "redis_rate_ap")
}()

// kind is how the chart colours a row.
func kind(impl string) string {
	switch {
	case strings.HasPrefix(impl, "floor"):
		return "floor"
	case strings.HasPrefix(impl, "bindings_"):
		return "bindings"
	case strings.HasPrefix(impl, "redlimit_") && strings.HasSuffix(impl, "_ap"):
		return "ours_ap"
	case strings.HasPrefix(impl, "redlimit_") && (strings.HasSuffix(impl, "_rueidis") || strings.HasSuffix(impl, "_valkey")):
		return "ours_rueidis"
	case strings.HasPrefix(impl, "redlimit_") && strings.HasSuffix(impl, "_cache"):
		return "ours_cache"
	case strings.HasPrefix(impl, "redlimit_"):
		return "ours"
	}
	return "peer"
}

// sortBy orders names by their place in order, unknown names last.
func sortBy(names []string, order []string) []string {
	names = slices.Clone(names)
	rank := func(s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

// scenarios returns the scenarios and caller counts of the raw output.
func (r *results) groups() (scenarios []string, gs []int) {
	for rw := range r.decision {
		if !slices.Contains(scenarios, rw.scenario) {
			scenarios = append(scenarios, rw.scenario)
		}
		if !slices.Contains(gs, rw.g) {
			gs = append(gs, rw.g)
		}
	}
	slices.Sort(gs)
	return sortBy(scenarios, scenarioOrder), gs
}

// impls returns the rows of one group, in table order.
func (r *results) impls(scenario string, g int) []string {
	var out []string
	for rw := range r.decision {
		if rw.scenario == scenario && rw.g == g {
			out = append(out, rw.impl)
		}
	}
	return sortBy(out, implOrder)
}
