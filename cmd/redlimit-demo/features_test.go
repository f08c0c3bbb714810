package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func post(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(u, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// The same hammering through an Atomic rule and through All, on the simulated
// clock, so the numbers are exact: the Atomic rule counts only what it admits,
// All spends both limits on requests the other denies and admits fewer.
func TestTwoLimits(t *testing.T) {
	srv := newTestServer(t)
	type result struct{ Strategies [2]strategy }
	var first result
	for run := range 2 {
		_, body := mustGet(t, srv.URL+"/api/two")
		r := decode[result](t, body)
		multi, all := r.Strategies[0], r.Strategies[1]
		if !multi.Atomic || all.Atomic || multi.Admitted+multi.Denied != 80 || all.Admitted+all.Denied != 80 {
			t.Fatalf("strategies %+v %+v", multi, all)
		}
		if multi.Wasted != [2]int64{} || multi.Counted != [2]int64{int64(multi.Admitted), int64(multi.Admitted)} {
			t.Errorf("the Atomic rule counted %v and wasted %v for %d admitted", multi.Counted, multi.Wasted, multi.Admitted)
		}
		for i := range 2 {
			if all.Counted[i]-all.Wasted[i] != int64(all.Admitted) || all.Wasted[i] == 0 {
				t.Errorf("All: limit %d counted %d, wasted %d, for %d admitted", i, all.Counted[i], all.Wasted[i], all.Admitted)
			}
		}
		if all.Admitted >= multi.Admitted {
			t.Errorf("All admitted %d, the Atomic rule %d: the waste should cost All", all.Admitted, multi.Admitted)
		}
		// A run is exact: the next one, on fresh keys, decides alike.
		if run == 0 {
			first = r
		} else if diff := cmp.Diff(first, r, cmp.AllowUnexported(strategy{})); diff != "" {
			t.Errorf("two runs differ (-first +second):\n%s", diff)
		}
	}
}

func TestTierSwitch(t *testing.T) {
	srv := newTestServer(t)
	send := func(key string) (int, string) {
		resp, body := mustGet(t, srv.URL+"/api/tier?key="+key)
		return resp.StatusCode, resp.Header.Get("RateLimit") + body
	}
	var got []int
	for range 4 {
		code, _ := send("alice-key")
		got = append(got, code)
	}
	if diff := cmp.Diff([]int{200, 200, 200, 429}, got); diff != "" {
		t.Errorf("free plan (-want +got):\n%s", diff)
	}
	if resp, body := post(t, srv.URL+"/api/tier?plan=pro"); resp.StatusCode != 200 || !strings.Contains(body, `"plan":"pro"`) {
		t.Fatalf("upgrade: %d %s", resp.StatusCode, body)
	}
	// On one state: the 3 counted stay counted, the difference passes.
	code, rl := send("alice-key")
	if code != 200 || !strings.HasPrefix(rl, `"plan";r=6;`) {
		t.Errorf("after the upgrade: %d %s, want 200 with 6 left of 10", code, rl)
	}
	code, body := send("mallory-key")
	if code != 401 || !strings.Contains(body, "unknown API key") {
		t.Errorf("an unknown key: %d %s", code, body)
	}
	if resp, _ := post(t, srv.URL+"/api/tier?plan=gold"); resp.StatusCode != 400 {
		t.Errorf("plan=gold: %d", resp.StatusCode)
	}
}

func TestDenyCachePanel(t *testing.T) {
	srv := newTestServer(t)
	type result struct{ Sides [2]cacheSide }
	var r result
	for range 5 {
		_, body := post(t, srv.URL+"/api/denycache?n=20")
		r = decode[result](t, body)
	}
	plain, cached := r.Sides[0], r.Sides[1]
	if plain.Decisions != 100 || cached.Decisions != 100 || plain.Allowed != 5 || cached.Allowed != 5 {
		t.Fatalf("sides %+v %+v", plain, cached)
	}
	if plain.RoundTrips != 100 || plain.Cached != 0 {
		t.Errorf("without a cache: %d round trips, %d cached", plain.RoundTrips, plain.Cached)
	}
	// The cache asks Redis for the 5 allowed and the first denial, then
	// denies in memory (the limit refills nothing within the test).
	if cached.RoundTrips != 6 || cached.Cached != 94 {
		t.Errorf("with a cache: %d round trips, %d denied in memory; want 6 and 94", cached.RoundTrips, cached.Cached)
	}
	if resp, _ := post(t, srv.URL+"/api/denycache?n=101"); resp.StatusCode != 400 {
		t.Errorf("n=101: %d", resp.StatusCode)
	}
	_, body := post(t, srv.URL+"/api/denycache?reset=1")
	if r := decode[result](t, body); r.Sides[0].Decisions != 0 || r.Sides[1].RoundTrips != 0 {
		t.Errorf("after a reset: %+v", r)
	}
}

func TestOutagePanel(t *testing.T) {
	srv := newTestServer(t)
	type result struct {
		Down    bool
		Answers map[string][]answer
	}
	statuses := func(r result) map[string][]int {
		m := map[string][]int{}
		for k, as := range r.Answers {
			for _, a := range as {
				m[k] = append(m[k], a.Status)
			}
		}
		return m
	}
	post(t, srv.URL+"/api/outage?down=1")
	_, body := post(t, srv.URL+"/api/outage?send=5")
	r := decode[result](t, body)
	want := map[string][]int{
		"no fallback":    {503, 503, 503, 503, 503},
		"FailOpen":       {200, 200, 200, 200, 200},
		"FailClosed":     {503, 503, 503, 503, 503},
		"FailLocal(0.5)": {200, 200, 429, 429, 429}, // half of 4, in memory
	}
	if diff := cmp.Diff(want, statuses(r)); !r.Down || diff != "" {
		t.Errorf("Redis down (%v): statuses (-want +got):\n%s", r.Down, diff)
	}
	if a := r.Answers["FailClosed"][0]; !strings.Contains(a.Title, "temporary server capacity") {
		t.Errorf("FailClosed answers %+v", a)
	}
	// Back up: Redis decides, the same for every policy (4 of 5 pass).
	post(t, srv.URL+"/api/outage?down=0")
	_, body = post(t, srv.URL+"/api/outage?send=5")
	for k, s := range statuses(decode[result](t, body)) {
		if diff := cmp.Diff([]int{200, 200, 200, 200, 429}, s); diff != "" {
			t.Errorf("Redis up, %s (-want +got):\n%s", k, diff)
		}
	}
	resp, body := mustGet(t, srv.URL+"/api/outage")
	if resp.StatusCode != 200 || decode[result](t, body).Down {
		t.Errorf("GET /api/outage: %d %s", resp.StatusCode, body)
	}
}

func TestLeasesPanel(t *testing.T) {
	srv := newTestServer(t)
	type result struct {
		Jobs []job
		Last string
	}
	var got []string
	for _, kind := range []string{"job", "crash", "job", "job"} {
		_, body := post(t, srv.URL+"/api/leases?start="+kind)
		r := decode[result](t, body)
		got = append(got, r.Last[:strings.Index(r.Last, " left")])
		if len(r.Jobs) > 3 {
			t.Fatalf("%d jobs in flight over a cap of 3", len(r.Jobs))
		}
	}
	want := []string{"allowed, 2 of 3", "allowed, 1 of 3", "allowed, 0 of 3", "denied, 0 of 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("acquires (-want +got):\n%s", diff)
	}
	// The two jobs release their leases after 5 s; the crashed one does not.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := mustGet(t, srv.URL+"/api/leases")
		r := decode[result](t, body)
		if len(r.Jobs) == 1 && r.Jobs[0].Crashed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs in flight after the releases: %+v", r.Jobs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, body := post(t, srv.URL+"/api/leases?start=job")
	if r := decode[result](t, body); !strings.HasPrefix(r.Last, "allowed, 1 of 3") {
		t.Errorf("after the releases: %s, want a slot (the crashed job still holds one)", r.Last)
	}
	if resp, _ := post(t, srv.URL+"/api/leases?start=nap"); resp.StatusCode != 400 {
		t.Errorf("start=nap: %d", resp.StatusCode)
	}
}
