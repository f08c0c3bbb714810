package main

import (
	"fmt"
	"slices"
	"strings"
)

// complete reports what the raw output lacks for the tables: every row a
// pass announced must have reported once for each announcement, and every
// section must have rows, so that a partial run fails here instead of
// printing a table with rows missing (or keeping the last run's).
func complete(r *results) error {
	var missing []string
	for key, n := range r.expect {
		if got := r.seen[key]; got < n {
			missing = append(missing, fmt.Sprintf("%s (%d of %d)", key, got, n))
		}
	}
	slices.Sort(missing)
	for _, s := range []struct {
		name string
		n    int
	}{
		{"BenchmarkDecision", len(r.decision)},
		{"BenchmarkMemory", len(r.memory)},
		{"TestAccuracy", len(r.accuracy)},
		{"TestAnatomy", len(r.anatomyRows)},
		{"TestHTTP", len(r.httpRows)},
		{"TestOutbound", len(r.outboundRows)},
	} {
		if s.n == 0 {
			missing = append(missing, "every result of "+s.name)
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
