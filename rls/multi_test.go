package rls

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// multiConfig has a rule of 3 per minute in each algorithm, and one of 1
// per hour to deny with (a GCRA: no window ends to refill it mid-test).
const multiConfig = `
domain: m
descriptors:
  - key: fixed_window
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: gcra
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: gcra}
  - key: token_bucket
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: token_bucket}
  - key: sliding_window_counter
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window_counter}
  - key: sliding_window_log
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window_log}
  - key: leaky_bucket
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: leaky_bucket}
  - key: full
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: gcra}
  - key: shared
    rate_limit: {unit: day, requests_per_unit: 20}
  - key: shared_gcra
    rate_limit: {unit: day, requests_per_unit: 20, algorithm: gcra}
`

var multiAlgorithms = []string{"fixed_window", "gcra", "token_bucket", "sliding_window_counter", "sliding_window_log", "leaky_bucket"}

// TestADeniedRequestGivesBackWhatItReserved: a request whose every other
// descriptor passes (one of them twice, one at a cost of 2), denied by one
// that is spent, counts nothing in any algorithm, however often it is
// asked: each descriptor then still admits its whole limit at once.
func TestADeniedRequestGivesBackWhatItReserved(t *testing.T) {
	addr := redisserver.Start(t)
	ts := startServer(t, addr, map[string]string{"m.yaml": multiConfig}, nil)
	if r := ts.call(t, req("m", []string{"full", "x"})); r.OverallCode != ok {
		t.Fatalf("the first of 1 per hour: %v", r)
	}
	denied := &rlpb.RateLimitRequest{Domain: "m"}
	for _, a := range multiAlgorithms {
		denied.Descriptors = append(denied.Descriptors, desc(a, "x"))
	}
	denied.Descriptors = append(denied.Descriptors, desc("gcra", "x"), withHits(desc("token_bucket", "x"), 2), desc("full", "x"))
	for i := 0; i < 5; i++ {
		r := ts.call(t, denied)
		if r.OverallCode != over || r.Statuses[len(r.Statuses)-1].Code != over {
			t.Fatalf("request %d: %v, want OVER_LIMIT by the spent descriptor", i, r)
		}
		for j, st := range r.Statuses[:len(multiAlgorithms)] {
			if st.Code != ok {
				t.Fatalf("request %d, descriptor %d: %v, want OK (it passes alone)", i, j, st)
			}
		}
	}
	for _, a := range multiAlgorithms {
		r := ts.call(t, &rlpb.RateLimitRequest{Domain: "m", Descriptors: []*rlcommon.RateLimitDescriptor{withHits(desc(a, "x"), 3)}})
		if r.OverallCode != ok {
			t.Errorf("%s: 3 at once after the denials: %v, want OK (the denied requests counted nothing)", a, r)
		}
	}
}

// TestConcurrentRequestsNeverAdmitPastALimit: 200 requests at once, each
// of two or three descriptors drawn from a few keys in two algorithms. No
// key admits more than its limit; every admitted request is counted and
// no denied one is: what is left of each fixed window is its limit less
// the admitted requests' hits exactly. (A request names each key once
// here: one that only its own repeat of a key denies counts in order, as
// the reference's does.)
func TestConcurrentRequestsNeverAdmitPastALimit(t *testing.T) {
	addr := redisserver.Start(t)
	ts := startServer(t, addr, map[string]string{"m.yaml": multiConfig}, nil)
	const limit, n = 20, 200
	keys := []string{"shared", "shared_gcra"}
	values := []string{"a", "b", "c", "d"}
	for attempt := 0; ; attempt++ {
		r := rand.New(rand.NewSource(time.Now().UnixNano()))
		run := fmt.Sprint(attempt) // fresh keys each attempt
		reqs := make([]*rlpb.RateLimitRequest, n)
		for i := range reqs {
			reqs[i] = &rlpb.RateLimitRequest{Domain: "m"}
			named := map[string]bool{}
			for k := 2 + r.Intn(2); k > 0; {
				key, v := keys[r.Intn(2)], run+values[r.Intn(len(values))]
				if named[key+"="+v] {
					continue
				}
				named[key+"="+v] = true
				reqs[i].Descriptors = append(reqs[i].Descriptors, withHits(desc(key, v), uint64(1+r.Intn(2))))
				k--
			}
		}
		day := time.Now().UTC().YearDay()
		resps := make([]*rlpb.RateLimitResponse, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resps[i], errs[i] = ts.client.ShouldRateLimit(context.Background(), reqs[i])
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		admitted := map[string]uint64{}
		passed := 0
		for i, resp := range resps {
			if resp.OverallCode != ok {
				continue
			}
			passed++
			for _, d := range reqs[i].Descriptors {
				admitted[d.Entries[0].Key+"="+d.Entries[0].Value] += d.HitsAddend.GetValue()
			}
		}
		// What each fixed window has left, looked at (hits_addend 0).
		left := map[string]uint32{}
		for _, v := range values {
			look := &rlpb.RateLimitRequest{Domain: "m", Descriptors: []*rlcommon.RateLimitDescriptor{withHits(desc("shared", run+v), 0)}}
			left["shared="+run+v] = ts.call(t, look).Statuses[0].LimitRemaining
		}
		if time.Now().UTC().YearDay() != day && attempt < 2 {
			continue // the day's window ended meanwhile: count again
		}
		if passed == 0 || passed == n {
			t.Fatalf("%d of %d requests passed: want the limits to admit some and deny others", passed, n)
		}
		for k, hits := range admitted {
			if hits > limit {
				t.Errorf("%s admitted %d, past its limit of %d", k, hits, limit)
			}
		}
		for k, l := range left {
			if uint64(l) != limit-admitted[k] {
				t.Errorf("%s has %d left, want %d less the %d the admitted requests counted: a denied request counted, or an admitted one did not", k, l, limit, admitted[k])
			}
		}
		return
	}
}
