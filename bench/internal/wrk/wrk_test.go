package wrk

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const report = `Running 1s test @ http://127.0.0.1:33163/deny
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.04ms    4.90ms  85.96ms   93.01%
    Req/Sec    46.44k    15.41k   69.29k    65.00%
  Latency Distribution
     50%  524.00us
     75%    1.56ms
     90%    4.56ms
     99%   1.27s
  93324 requests in 1.02s, 11.84MB read
  Socket errors: connect 0, read 2, write 0, timeout 12
  Non-2xx or 3xx responses: 93000
Requests/sec:  91341.26
Transfer/sec:     11.59MB
`

func TestParse(t *testing.T) {
	got, err := Parse(report)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{RPS: 91341.26, P50: 524 * time.Microsecond, P99: 1270 * time.Millisecond, Requests: 93324, Non2xx: 93000, SocketErrors: 14}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A report missing any number the tables need is an error, never zeros.
func TestParseIncomplete(t *testing.T) {
	for _, drop := range []string{"Requests/sec:", "requests in", "50%", "99%"} {
		var kept []string
		for _, line := range strings.Split(report, "\n") {
			if !strings.Contains(line, drop) {
				kept = append(kept, line)
			}
		}
		if _, err := Parse(strings.Join(kept, "\n")); err == nil {
			t.Errorf("without %q: no error", drop)
		}
	}
	if _, err := Parse(strings.Replace(report, "524.00us", "524.00", 1)); err == nil {
		t.Error("a latency without a unit: no error")
	}
}
