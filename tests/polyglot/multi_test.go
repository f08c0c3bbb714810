package polyglot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/bindings"
)

// perLimit is one record of multi.lua's reply as the examples print it, by
// the manifest's field names (durations in ms, "never" for never).
type perLimit struct {
	Remaining  int64           `json:"remaining"`
	RetryAfter json.RawMessage `json:"retry_after"`
	ResetAfter json.RawMessage `json:"reset_after"`
}

// TestMultiTriples: the examples build multi.lua's limits from the
// manifest's records alone (burst, rate, period each checked against its
// own bounds) and read its per_limit records by name; every decision of 4
// calls against 2 per hour and 3 per day matches the Go bindings'. A
// burst of 5e10, which the script refuses, is refused before sending:
// exit 2 (a usage error), and the keys stay untouched.
func TestMultiTriples(t *testing.T) {
	rdb, addr := client(t)
	ctx := context.Background()
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			keys := []string{fmt.Sprintf("pm:{%s}:hour", l.name), fmt.Sprintf("pm:{%s}:day", l.name)}
			args := []string{"--redis", addr, "--json", "--calls", "4", "multi", strings.Join(keys, ","), "cost=1", "limits=2/2/1h,3/3/24h"}
			r := cli(t, prog, args...)
			if r.code != 0 {
				t.Fatalf("%s: %s", strings.Join(args, " "), r)
			}
			var got []string
			for _, s := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var v struct {
					Allowed  bool       `json:"allowed"`
					Denied   int64      `json:"denied"`
					PerLimit []perLimit `json:"per_limit"`
				}
				if err := json.Unmarshal([]byte(s), &v); err != nil {
					t.Fatalf("%q: %v", s, err)
				}
				got = append(got, fmt.Sprintf("%v %d %s", v.Allowed, v.Denied, records(t, v.PerLimit)))
			}
			var want []string
			goKeys := []string{keys[0] + ":go", keys[1] + ":go"}
			for range 4 {
				res, err := bindings.Multi(ctx, rdb, goKeys, bindings.MultiParams{Cost: 1, Limits: []bindings.MultiLimit{
					{Burst: 2, Rate: 2, Period: time.Hour}, {Burst: 3, Rate: 3, Period: 24 * time.Hour}}})
				if err != nil {
					t.Fatal(err)
				}
				var recs []string
				for _, p := range res.PerLimit {
					recs = append(recs, fmt.Sprintf("%d/%s/%s", p.Remaining, goMs(p.RetryAfter), goMs(p.ResetAfter)))
				}
				want = append(want, fmt.Sprintf("%v %d %s", res.Allowed, res.Denied, strings.Join(recs, ",")))
			}
			if diff := cmp.Diff(coarse(want), coarse(got)); diff != "" {
				t.Errorf("%s decisions (-Go +example):\n%s", l.name, diff)
			}

			bad := []string{"--redis", addr, "--json", "--calls", "1", "multi", "pm:{bad}:a,pm:{bad}:b", "cost=1", "limits=50000000000/1/1h,1/1/1h"}
			r = cli(t, prog, bad...)
			if r.code != 2 || !strings.Contains(r.stderr+r.stdout, "burst") {
				t.Errorf("%s: a burst of 5e10: want exit 2 naming burst:\n%s", strings.Join(bad, " "), r)
			}
			if n := rdb.Exists(ctx, "pm:{bad}:a", "pm:{bad}:b").Val(); n != 0 {
				t.Errorf("a refused call wrote %d keys", n)
			}
		})
	}
}

// records renders per_limit as remaining/retry/reset, durations in ms.
func records(t *testing.T, ps []perLimit) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d/%s/%s", p.Remaining, rawMs(t, p.RetryAfter), rawMs(t, p.ResetAfter)))
	}
	return strings.Join(out, ",")
}

func rawMs(t *testing.T, raw json.RawMessage) string {
	if string(raw) == `"never"` {
		return "never"
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s is not a duration in ms: %v", raw, err)
	}
	return fmt.Sprint(int64(f))
}

func goMs(d time.Duration) string {
	if d == bindings.MultiPerLimitRetryAfterNever {
		return "never"
	}
	return fmt.Sprint(d.Milliseconds())
}

// coarse rounds every duration in ms to the second, since the two sides'
// keys were first written a few ms apart.
func coarse(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		fields := strings.FieldsFunc(l, func(c rune) bool { return c == '/' || c == ',' || c == ' ' })
		for j, f := range fields {
			var n int64
			if _, err := fmt.Sscan(f, &n); err == nil && n >= 1000 {
				fields[j] = fmt.Sprint((n + 500) / 1000 * 1000)
			}
		}
		out[i] = strings.Join(fields, " ")
	}
	return out
}
