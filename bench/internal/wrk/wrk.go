// Package wrk reads the report of the wrk HTTP load generator (run with
// --latency), for the HTTP tier of make bench.
package wrk

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Result is what one wrk run reports.
type Result struct {
	RPS      float64       // Requests/sec
	P50, P99 time.Duration // from the Latency Distribution
	Requests int64         // "N requests in ..."
	Non2xx   int64         // "Non-2xx or 3xx responses: N"
	// SocketErrors is the sum of the connect, read, write and timeout
	// counts of the "Socket errors:" line.
	SocketErrors int64
}

// Parse reads wrk's report. A report without the request count, the
// requests a second or the 50% and 99% latencies is an error: a run whose
// numbers are missing must not read as zeros.
func Parse(out string) (Result, error) {
	var r Result
	var haveRPS, haveReq, have50, have99 bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := duration(f[1])
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %v", line, err)
			}
			if f[0] == "50%" {
				r.P50, have50 = d, true
			} else {
				r.P99, have99 = d, true
			}
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %v", line, err)
			}
			r.Requests, haveReq = n, true
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %v", line, err)
			}
			r.RPS, haveRPS = v, true
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			n, err := strconv.ParseInt(f[len(f)-1], 10, 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %v", line, err)
			}
			r.Non2xx = n
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 12
			for i := 2; i+1 < len(f); i += 2 {
				n, err := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				if err != nil {
					return r, fmt.Errorf("wrk: %q: %v", line, err)
				}
				r.SocketErrors += n
			}
		}
	}
	if !haveRPS || !haveReq || !have50 || !have99 {
		return r, fmt.Errorf("wrk: the report lacks Requests/sec, the request count or the 50%%/99%% latencies (run with --latency):\n%s", out)
	}
	return r, nil
}

// duration reads wrk's latencies: 524.00us, 1.56ms, 2.01s, 3.00m.
func duration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(x * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("no unit in %q", s)
}
