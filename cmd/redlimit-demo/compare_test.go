package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func getComparison(t *testing.T, srvURL string, q url.Values) comparison {
	t.Helper()
	resp, body := mustGet(t, srvURL+"/api/compare?"+q.Encode())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", q.Encode(), resp.StatusCode, body)
	}
	var c comparison
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func cmpQuery(rate, period, burst, cost, pattern string) url.Values {
	return url.Values{"rate": {rate}, "period": {period}, "burst": {burst}, "cost": {cost}, "pattern": {pattern}}
}

func byAlgorithm(c comparison) map[string]lane {
	m := map[string]lane{}
	for _, l := range c.Lanes {
		m[l.Algorithm] = l
	}
	return m
}

// The boundary attack shows what the issue promises: the fixed window
// admits twice its limit within one period, the sliding log exactly its
// limit, whatever the limit.
func TestCompareBoundaryAttack(t *testing.T) {
	srv := newTestServer(t)
	for _, tt := range []struct{ rate, period string }{{"1", "1s"}, {"4", "2s"}, {"10", "500ms"}, {"100", "10s"}} {
		c := getComparison(t, srv.URL, cmpQuery(tt.rate, tt.period, tt.rate, "1", "boundary"))
		lanes := byAlgorithm(c)
		if len(lanes) != 7 {
			t.Fatalf("%d lanes: %v", len(lanes), lanes)
		}
		if got, want := lanes["fixed_window"].Totals.MaxInPeriod, 2*c.Rate; got != want {
			t.Errorf("rate %s per %s: the fixed window admitted %d in one period, want %d", tt.rate, tt.period, got, want)
		}
		if got, want := lanes["sliding_window_log"].Totals, (totals{Admitted: int(c.Rate), Denied: int(c.Rate), MaxInPeriod: c.Rate}); got != want {
			t.Errorf("rate %s per %s: the sliding log %+v, want %+v", tt.rate, tt.period, got, want)
		}
		if c.Start%c.Period != 0 {
			t.Errorf("the run starts at %d µs, not a window boundary of %d µs", c.Start, c.Period)
		}
	}
}

// Every lane decides every request once, in order, and its totals add up;
// a sample never shows more than the limit.
func TestCompareLanes(t *testing.T) {
	srv := newTestServer(t)
	for _, pattern := range []string{"burst", "steady", "boundary", "trickle"} {
		c := getComparison(t, srv.URL, cmpQuery("5", "1s", "3", "1", pattern))
		if c.Requests == 0 || c.Span <= 0 {
			t.Fatalf("%s: %+v", pattern, c)
		}
		for _, l := range c.Lanes {
			if len(l.Marks) != c.Requests || len(l.Capacity) != samples+1 {
				t.Errorf("%s/%s: %d marks, %d samples", pattern, l.Algorithm, len(l.Marks), len(l.Capacity))
			}
			tot := l.Totals
			if tot.Admitted+tot.Denied+tot.Never != c.Requests || tot.Never != 0 {
				t.Errorf("%s/%s: totals %+v of %d requests", pattern, l.Algorithm, tot, c.Requests)
			}
			for i, m := range l.Marks {
				if i > 0 && m.At < l.Marks[i-1].At || m.At > c.Span {
					t.Errorf("%s/%s: mark %d at %d", pattern, l.Algorithm, i, m.At)
				}
				if !m.Allowed && m.RetryAfter <= 0 {
					t.Errorf("%s/%s: denial %d without a wait: %+v", pattern, l.Algorithm, i, m)
				}
			}
			for _, s := range l.Capacity {
				if s.Remaining < 0 || s.Remaining > l.Limit {
					t.Errorf("%s/%s: capacity %d of %d", pattern, l.Algorithm, s.Remaining, l.Limit)
				}
			}
		}
		// Below the rate nobody denies.
		if pattern == "trickle" {
			for _, l := range c.Lanes {
				if l.Totals.Denied != 0 {
					t.Errorf("trickle: %s denied %d", l.Algorithm, l.Totals.Denied)
				}
			}
		}
	}
}

// A cost above what the limit lets through at once is denied for good in
// every lane, and says so: never a plain denial.
func TestCompareNever(t *testing.T) {
	srv := newTestServer(t)
	c := getComparison(t, srv.URL, cmpQuery("4", "1s", "4", "5", "burst"))
	for _, l := range c.Lanes {
		if want := (totals{Never: c.Requests}); l.Totals != want {
			t.Errorf("%s: %+v, want %+v", l.Algorithm, l.Totals, want)
		}
		for _, m := range l.Marks {
			if m.Allowed || !m.Never || m.RetryAfter != 0 {
				t.Errorf("%s: %+v", l.Algorithm, m)
			}
		}
	}
}

// Replayed clicks keep their times and run half a period past the last.
func TestCompareReplay(t *testing.T) {
	srv := newTestServer(t)
	q := cmpQuery("2", "1s", "2", "1", "replay")
	q.Set("times", "0,10,10,400,1600")
	c := getComparison(t, srv.URL, q)
	var got []int64
	for _, m := range c.Lanes[0].Marks {
		got = append(got, m.At)
	}
	if diff := cmp.Diff([]int64{0, 10000, 10000, 400000, 1600000}, got); diff != "" {
		t.Errorf("replayed instants, µs (-want +got):\n%s", diff)
	}
	if c.Span != 2100000 {
		t.Errorf("span %d µs, want 2.1 s", c.Span)
	}
}

func TestCompareRefuses(t *testing.T) {
	srv := newTestServer(t)
	withTimes := func(times string) url.Values {
		q := cmpQuery("3", "1s", "3", "1", "replay")
		q.Set("times", times)
		return q
	}
	for _, tt := range []struct {
		q    url.Values
		want string
	}{
		{cmpQuery("0", "1s", "3", "1", "burst"), "rate: 0, the compare view takes 1 to 100"},
		{cmpQuery("101", "1s", "3", "1", "burst"), "rate: 101"},
		{cmpQuery("3", "1s", "101", "1", "burst"), "burst: 101"},
		{cmpQuery("x", "1s", "3", "1", "burst"), `rate: "x" is not a whole number`},
		{cmpQuery("3", "11s", "3", "1", "burst"), "period: 11s, the compare view takes whole milliseconds from 100ms to 10s"},
		{cmpQuery("3", "1500us", "3", "1", "burst"), "period: 1.5ms"},
		{cmpQuery("3", "soon", "3", "1", "burst"), `period: "soon" is not a duration`},
		{cmpQuery("3", "1s", "3", "0", "burst"), "cost: 0 requests, want 1 to 1e9"},
		{cmpQuery("3", "1s", "3", "1", "zigzag"), `pattern: "zigzag" is none of`},
		{withTimes(""), "nothing to replay"},
		{withTimes("0,20,10"), `times: "10", want ms from 0 to 30000 in order`},
		{withTimes("0,30001"), `times: "30001"`},
		{withTimes("0,-1"), `times: "-1"`},
		{withTimes(strings.Repeat("1,", 600) + "1"), "more than 600 clicks"},
	} {
		resp, body := mustGet(t, srv.URL+"/api/compare?"+tt.q.Encode())
		var p struct{ Detail string }
		_ = json.Unmarshal([]byte(body), &p)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.Detail, tt.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tt.q.Encode(), resp.StatusCode, body, tt.want)
		}
	}
}

// A run takes a small part of the pattern's simulated time, and cleans up
// after itself.
func TestCompareIsFastAndLeavesNoKeys(t *testing.T) {
	rdb, backend, closeAll, err := connect("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv := httptest.NewServer(newServer(rdb, backend))
	t.Cleanup(srv.Close)
	start := time.Now()
	c := getComparison(t, srv.URL, cmpQuery("20", "10s", "20", "1", "steady"))
	if took, simulated := time.Since(start), time.Duration(c.Span)*time.Microsecond; took > simulated/2 {
		t.Errorf("the run took %v for %v of traffic", took, simulated)
	}
	keys, err := rdb.Keys(context.Background(), "demo:cmp:*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left: %v %v", keys, err)
	}
}
