package rls

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const ok, over = rlpb.RateLimitResponse_OK, rlpb.RateLimitResponse_OVER_LIMIT

const serviceConfig = `
domain: svc
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: a_b
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: user
    descriptors:
      - key: path
        rate_limit: {unit: hour, requests_per_unit: 2}
  - key: hourly
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: daily
    rate_limit: {unit: day, requests_per_unit: 5}
  - key: unl
    rate_limit: {unlimited: true}
  - key: blocked
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: g
    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: gcra, burst: 2}
  - key: five
    rate_limit: {unit: minute, unit_multiplier: 5, requests_per_unit: 2}
  - key: ny
    rate_limit: {unit: day, calendar: America/New_York, requests_per_unit: 2}
  - key: tokyo
    rate_limit: {unit: day, calendar: Asia/Tokyo, requests_per_unit: 2}
  - key: month
    rate_limit: {unit: month, calendar: Europe/Berlin, requests_per_unit: 2}
`

// codes of a response's statuses, then its overall code.
func codesOf(r *rlpb.RateLimitResponse) []rlpb.RateLimitResponse_Code {
	var cs []rlpb.RateLimitResponse_Code
	for _, s := range r.Statuses {
		cs = append(cs, s.Code)
	}
	return append(cs, r.OverallCode)
}

func TestBadInputIsAnErrorAndChangesNothing(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	cases := []struct {
		name string
		req  *rlpb.RateLimitRequest
		want string
	}{
		{"empty domain", req("", []string{"a", "x"}), "rate limit domain must not be empty"},
		{"no descriptors", req("svc"), "rate limit descriptor list must not be empty"},
		{"a descriptor with no entries", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a", "x"), {}}}, "descriptor 1 has no entries"},
		{"an entry with an empty key", req("svc", []string{"a", "x"}, []string{"", "x"}), "descriptor 1, entry 0: the key is empty"},
		{"negative hits", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc("a", "x").Entries, IsNegativeHits: true}}}, "is_negative_hits is not supported"},
		{"an override of unit UNKNOWN", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a", "x"), {Entries: desc("a", "y").Entries, Limit: &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_UNKNOWN}}}}, "descriptor 1: the limit override's unit UNKNOWN is not a unit"},
		{"an override of an unknown unit", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc("a", "y").Entries, Limit: &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: 99}}}}, "the limit override's unit 99 is not a unit"},
		{"an override above the scripts' range", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc("a", "y").Entries, Limit: &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2e9, Unit: typev3.RateLimitUnit_SECOND}}}}, "Rate must be from 1 to 1e9"},
		{"an override multiplier of 0", &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc("a", "y").Entries, Limit: &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_SECOND, UnitMultiplier: wrapperspb.UInt32(0)}}}}, "unit_multiplier is 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := mr.Keys()
			_, err := ts.client.ShouldRateLimit(context.Background(), c.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.want) {
				t.Fatalf("got %v, want InvalidArgument with %q", err, c.want)
			}
			if after := mr.Keys(); len(after) != len(before) {
				t.Errorf("Redis keys %v, then %v: bad input changed something", before, after)
			}
		})
	}
	// The server still answers.
	if r := ts.call(t, req("svc", []string{"a", "x"})); r.OverallCode != ok {
		t.Errorf("after bad input: %v", r)
	}
}

func TestHitsAboveTheLimitAreDeniedAndCountNothing(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	ts.call(t, req("svc", []string{"a", "x"})) // 2 of 3 left
	for _, hits := range []uint64{3, 4, math.MaxUint32, math.MaxUint64} {
		r := ts.call(t, &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{withHits(desc("a", "x"), hits)}})
		if r.OverallCode != over || r.Statuses[0].LimitRemaining != 2 {
			t.Errorf("hits %d: %v, want OVER_LIMIT with 2 remaining", hits, r)
		}
	}
	r := ts.call(t, &rlpb.RateLimitRequest{Domain: "svc", HitsAddend: 2, Descriptors: []*rlcommon.RateLimitDescriptor{desc("a", "x")}})
	if r.OverallCode != ok || r.Statuses[0].LimitRemaining != 0 {
		t.Errorf("2 hits after the denials: %v, want OK with 0 remaining (the denials counted nothing)", r)
	}
}

func TestKeysNeverCollide(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	// The reference joins parts with '_': ("a", "b_c") and ("a_b", "c")
	// share its counter "svc_a_b_c_<window>". Here they are two rules'
	// counters, and each its own.
	for i := 0; i < 3; i++ {
		ts.call(t, req("svc", []string{"a", "b_c"}))
	}
	if r := ts.call(t, req("svc", []string{"a_b", "c"})); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 2 {
		t.Errorf(`("a_b", "c") after 3 of ("a", "b_c"): %v, want OK with 2 remaining`, r)
	}
	// The reference's key holds no unit: a day and an hour limit on one
	// descriptor share a counter for the first hour of each day. Here the
	// unit is in the key.
	for i := 0; i < 2; i++ {
		ts.call(t, req("svc", []string{"hourly", "x"}))
	}
	if r := ts.call(t, req("svc", []string{"daily", "x"})); r.Statuses[0].LimitRemaining != 4 {
		t.Errorf("daily after 2 hourly: %v, want 4 remaining", r)
	}
	// Every byte a value may hold stays inside the value's own part.
	values := []string{"", ":", "\\", "{", "}", "%", "{x}", "a:b", "a\\:b", "\x00", "é", strings.Repeat("z", 5000), "user:1}{"}
	for i, v := range values {
		for j, w := range values {
			if i == j {
				continue
			}
			if key("d", desc("k", v, "k", w).Entries, []string{v, w}) == key("d", desc("k", v+":k:"+w).Entries, []string{v + ":k:" + w}) {
				t.Errorf("%q then %q shares a key with their join", v, w)
			}
		}
	}
	seen := map[string]bool{}
	for _, v := range values {
		r := ts.call(t, req("svc", []string{"user", v}, []string{"user", "u"}))
		_ = r
		r = ts.call(t, req("svc", []string{"user", v, "path", v}))
		if r.OverallCode != ok || r.Statuses[0].LimitRemaining != 1 {
			t.Errorf("value %.20q: %v, want OK with 1 remaining (a counter of its own)", v, r)
		}
	}
	for _, k := range mr.Keys() {
		if seen[k] {
			t.Errorf("key %q twice", k)
		}
		seen[k] = true
		if strings.Count(k, "{") != 1 || strings.Count(k, "}") != 1 || !strings.HasSuffix(k, "}") {
			t.Errorf("Redis key %.80q: want exactly one hash tag, at the end", k)
		}
		if len(k) > 300 {
			t.Errorf("Redis key of %d bytes: a long value must be hashed", len(k))
		}
	}
}

func TestModes(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	// unlimited: OK with MaxUint32 remaining, no limit, no Redis.
	r := ts.call(t, req("svc", []string{"unl", "x"}))
	if r.OverallCode != ok || r.Statuses[0].LimitRemaining != math.MaxUint32 || r.Statuses[0].CurrentLimit != nil || len(mr.Keys()) != 0 {
		t.Errorf("unlimited: %v (keys %v)", r, mr.Keys())
	}
	// 0 per unit: always over, without Redis.
	r = ts.call(t, req("svc", []string{"blocked", "x"}))
	if r.OverallCode != over || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 0 || len(mr.Keys()) != 0 {
		t.Errorf("0 per unit: %v (keys %v)", r, mr.Keys())
	}
	// shadow_mode: the status says OK where the limit denies.
	ts.call(t, req("svc", []string{"shadow", "x"}))
	r = ts.call(t, req("svc", []string{"shadow", "x"}))
	if r.OverallCode != ok || r.Statuses[0].Code != ok || r.Statuses[0].LimitRemaining != 0 {
		t.Errorf("shadow mode: %v", r)
	}
	// quota_mode: OK, with the limit and remaining and no reset.
	ts.call(t, req("svc", []string{"quota", "x"}))
	r = ts.call(t, req("svc", []string{"quota", "x"}))
	if r.OverallCode != ok || r.Statuses[0].CurrentLimit == nil || r.Statuses[0].DurationUntilReset != nil {
		t.Errorf("quota mode: %v", r)
	}
	// No rule: OK with nothing else.
	r = ts.call(t, req("svc", []string{"nothing", "x"}))
	if r.OverallCode != ok || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("no rule: %v", r)
	}
	// An unknown domain: OK.
	if r := ts.call(t, req("elsewhere", []string{"a", "x"})); r.OverallCode != ok {
		t.Errorf("unknown domain: %v", r)
	}
}

func TestADeniedRequestCountsInNoDescriptor(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	ts.call(t, req("svc", []string{"hourly", "x"}))
	ts.call(t, req("svc", []string{"hourly", "x"})) // hourly x spent
	// ("a", "x") would pass, ("hourly", "x") denies: the request is
	// denied and ("a", "x") counts nothing.
	for i := 0; i < 5; i++ {
		r := ts.call(t, req("svc", []string{"a", "x"}, []string{"hourly", "x"}))
		if got := codesOf(r); got[0] != ok || got[1] != over || got[2] != over || r.Statuses[0].LimitRemaining != 3 {
			t.Fatalf("request %d: %v, want OK (3 remaining), OVER_LIMIT, OVER_LIMIT", i, r)
		}
	}
	// So does a rule of 0 per unit.
	r := ts.call(t, req("svc", []string{"a", "x"}, []string{"blocked", "x"}))
	if r.OverallCode != over || r.Statuses[0].LimitRemaining != 3 {
		t.Fatalf("with a blocked descriptor: %v", r)
	}
	// A shadow mode rule does not deny, so the others count.
	ts.call(t, req("svc", []string{"shadow", "y"}))
	r = ts.call(t, req("svc", []string{"a", "x"}, []string{"shadow", "y"}))
	if r.OverallCode != ok || r.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("with a shadow descriptor over its limit: %v, want OK and ('a', 'x') counted", r)
	}
	// Several that pass all count.
	r = ts.call(t, req("svc", []string{"a", "x"}, []string{"g", "x"}))
	if r.OverallCode != ok || r.Statuses[0].LimitRemaining != 1 || r.Statuses[1].LimitRemaining != 1 {
		t.Fatalf("two that pass: %v", r)
	}
}

func TestReplaces(t *testing.T) {
	mr := miniRedis(t)
	// The reference README's example 7.
	cfg := `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`
	ts := startServer(t, mr.Addr(), map[string]string{"e.yaml": cfg}, nil)
	r := ts.call(t, req("example7", []string{"key_1", "value_1", "user", "bkthomps"}, []string{"key_2", "value_2", "user", "bkthomps"}))
	if r.Statuses[0].CurrentLimit != nil || r.Statuses[1].CurrentLimit.GetRequestsPerUnit() != 10 {
		t.Fatalf("both: %v, want the first replaced and the second at 10/s", r)
	}
	r = ts.call(t, req("example7", []string{"key_1", "value_1", "user", "bkthomps"}))
	if r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 5 || r.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("the first alone: %v, want 5/s with 4 left (the replaced limit was not changed)", r)
	}
}

func TestResponseHeaders(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, map[string]string{"LIMIT_RESPONSE_HEADERS_ENABLED": "true"})
	r := ts.call(t, req("svc", []string{"a", "x"}, []string{"hourly", "x"}))
	got := map[string]string{}
	var order []string
	for _, h := range r.ResponseHeadersToAdd {
		got[h.Key] = h.Value
		order = append(order, h.Key)
	}
	// hourly has 1 left, a has 2: hourly binds.
	want := map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "1",
		"RateLimit-Policy": `"svc.hourly";q=2;w=3600`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, order)
		}
	}
	if !strings.HasPrefix(got["RateLimit"], `"svc.hourly";r=1;t=`) || got["RateLimit-Reset"] == "" {
		t.Errorf("RateLimit %q, RateLimit-Reset %q", got["RateLimit"], got["RateLimit-Reset"])
	}
	if strings.Join(order[:3], ",") != "RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset" {
		t.Errorf("order %v: want the reference's three first", order)
	}
}

// TestUnitMultiplier: unit_multiplier 5 with unit minute is one window of
// 5 minutes (envoyproxy/envoy#47307): 2 pass in it, the third waits for
// its end, and the answer names the multiplier and the 300 s window.
func TestUnitMultiplier(t *testing.T) {
	mr := miniRedis(t)
	// 10 s into the last 5-minute window of the epoch, on the server's
	// TIME: in the past, so no call passes its deadline by that clock.
	t0 := time.Now().Truncate(5 * time.Minute).Add(-5*time.Minute + 10*time.Second)
	mr.SetTime(t0)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, map[string]string{"LIMIT_RESPONSE_HEADERS_ENABLED": "true"})
	var got []rlpb.RateLimitResponse_Code
	var last *rlpb.RateLimitResponse
	for range 3 {
		last = ts.call(t, req("svc", []string{"five", "x"}))
		got = append(got, last.Statuses[0].Code)
	}
	if want := []rlpb.RateLimitResponse_Code{ok, ok, over}; !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	st := last.Statuses[0]
	if l := st.CurrentLimit; l.GetUnit() != rlpb.RateLimitResponse_RateLimit_MINUTE || l.GetUnitMultiplier().GetValue() != 5 || l.GetRequestsPerUnit() != 2 {
		t.Errorf("current limit %v, want 2 per 5 minutes", l)
	}
	if s := st.DurationUntilReset.GetSeconds(); s != 290 {
		t.Errorf("duration_until_reset %ds, want 290 (10 s into a 5-minute window)", s)
	}
	for _, h := range last.ResponseHeadersToAdd {
		if h.Key == "RateLimit-Policy" && h.Value != `"svc.five";q=2;w=300` {
			t.Errorf("RateLimit-Policy %q, want a 300 s window", h.Value)
		}
	}
	// The window is 5 minutes: a minute on the key is still spent; at the
	// next window's start it passes again.
	mr.SetTime(t0.Add(time.Minute))
	if c := ts.call(t, req("svc", []string{"five", "x"})).Statuses[0].Code; c != over {
		t.Errorf("a minute on: %v, want OVER_LIMIT (one window of 5 minutes)", c)
	}
	mr.SetTime(t0.Add(290 * time.Second))
	if c := ts.call(t, req("svc", []string{"five", "x"})).Statuses[0].Code; c != ok {
		t.Errorf("at the next window: %v, want OK", c)
	}
}

// TestCalendar: a calendar's day is the zone's, not the epoch's: its
// duration_until_reset runs to the next midnight in that zone, before and
// after anything is counted, and each zone counts apart.
func TestCalendar(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, nil)
	for _, c := range []struct{ key, zone string }{{"ny", "America/New_York"}, {"tokyo", "Asia/Tokyo"}, {"month", "Europe/Berlin"}} {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		// The next period's start, placed here by time.Date on its own.
		end := func() time.Time {
			y, m, d := time.Now().In(loc).Date()
			if c.key == "month" {
				return time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
			}
			return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
		}
		near := func(what string, got int64) {
			t.Helper()
			want := int64(time.Until(end()).Seconds())
			if got < want-2 || got > want+2 {
				t.Errorf("%s %s: duration_until_reset %ds, want %ds (to %v)", c.key, what, got, want, end())
			}
		}
		peek := &rlpb.RateLimitRequest{Domain: "svc", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: desc(c.key, "x").Entries, HitsAddend: wrapperspb.UInt64(0)}}}
		near("unused", ts.call(t, peek).Statuses[0].DurationUntilReset.GetSeconds())
		var got []rlpb.RateLimitResponse_Code
		var last *rlpb.RateLimitResponse
		for range 3 {
			last = ts.call(t, req("svc", []string{c.key, "x"}))
			got = append(got, last.Statuses[0].Code)
		}
		if want := []rlpb.RateLimitResponse_Code{ok, ok, over}; !slices.Equal(got, want) {
			t.Errorf("%s: codes %v, want %v", c.key, got, want)
		}
		near("used", last.Statuses[0].DurationUntilReset.GetSeconds())
	}
	// Each zone's quota has keys of its own: no two share a count.
	var zones []string
	for _, k := range mr.Keys() {
		if i := strings.Index(k, "@"); i >= 0 {
			zones = append(zones, k[i:strings.Index(k, ":{")])
		}
	}
	slices.Sort(zones)
	if want := []string{"@America/New_York", "@Asia/Tokyo", "@Europe/Berlin"}; !slices.Equal(zones, want) {
		t.Errorf("keys of zones %v, want %v", zones, want)
	}
}

func TestGlobalShadowMode(t *testing.T) {
	mr := miniRedis(t)
	ts := startServer(t, mr.Addr(), map[string]string{"svc.yaml": serviceConfig}, map[string]string{"SHADOW_MODE": "true"})
	r := ts.call(t, req("svc", []string{"blocked", "x"}))
	if r.OverallCode != ok || r.Statuses[0].Code != over {
		t.Errorf("SHADOW_MODE: %v, want OK overall and the status OVER_LIMIT", r)
	}
}
