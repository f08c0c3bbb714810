package main

import (
	"fmt"
	"slices"
	"strings"
)

// The parts of a raw output: each test's or benchmark's results.
const (
	partDecision = "BenchmarkDecision"
	partMemory   = "BenchmarkMemory"
	partAccuracy = "TestAccuracy"
	partAnatomy  = "TestAnatomy"
	partHTTP     = "TestHTTP"
	partOutbound = "TestOutbound"
)

// allParts are the parts make bench writes, all of which the tables need.
var allParts = []string{partDecision, partMemory, partAccuracy, partAnatomy, partHTTP, partOutbound}

// complete reports what the raw output lacks for the tables: every row a
// pass announced must have reported once for each announcement, and each
// of parts must have rows, so that a partial run fails here instead of
// printing a table with rows missing (or keeping the last run's).
func complete(r *results, parts []string) error {
	var missing []string
	for key, n := range r.expect {
		if got := r.seen[key]; got < n {
			missing = append(missing, fmt.Sprintf("%s (%d of %d)", key, got, n))
		}
	}
	slices.Sort(missing)
	rows := map[string]int{
		partDecision: len(r.decision),
		partMemory:   len(r.memory),
		partAccuracy: len(r.accuracy),
		partAnatomy:  len(r.anatomyRows),
		partHTTP:     len(r.httpRows),
		partOutbound: len(r.outboundRows),
	}
	for _, p := range allParts {
		if slices.Contains(parts, p) && rows[p] == 0 {
			missing = append(missing, "every result of "+p)
		}
	}
	if len(r.expect) == 0 {
		missing = append(missing, `the "# bench-expect" lines that say which rows the passes ran`)
	}
	if len(missing) > 0 {
		const most = 20
		more := ""
		if len(missing) > most {
			more = fmt.Sprintf("\n  ... and %d more", len(missing)-most)
			missing = missing[:most]
		}
		return fmt.Errorf("the raw output is incomplete; nothing was written. Missing:\n  %s%s", strings.Join(missing, "\n  "), more)
	}
	return nil
}
