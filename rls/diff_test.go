package rls

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// The differential test: the reference and this server on one
// redis-server, with one configuration, asked the same requests in the
// same order; every answer must match (codes, limits, remaining, reset,
// the reference's headers). Both decide by the clock, so a step that
// straddles a window's boundary may be counted in two windows: the test
// steps over boundaries (guard), and a unit whose boundary a step still
// straddled is not compared until its window ends (and the case is run
// again if too little was compared).

const diffConfig = `
domain: diff
descriptors:
  - key: sec
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: min
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: hour
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: day
    rate_limit: {unit: day, requests_per_unit: 2}
  - key: week
    rate_limit: {unit: week, requests_per_unit: 2}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 2}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 2}
  - key: k1
    value: v1
    descriptors:
      - key: k2
        rate_limit: {unit: minute, requests_per_unit: 4}
      - key: k2
        value: special
        rate_limit: {unit: minute, requests_per_unit: 2, name: special}
  - key: wild
    value: pre*
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: shared
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: unl
    rate_limit: {unlimited: true}
  - key: zero
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: named
    rate_limit: {unit: minute, requests_per_unit: 3, name: old}
  - key: replacer
    rate_limit: {unit: minute, requests_per_unit: 3, replaces: [{name: old}]}
`

// diffDescriptor picks one of diffConfig's descriptors, a value from a
// small pool, or an override.
func diffDescriptor(r *rand.Rand) *rlcommon.RateLimitDescriptor {
	v := []string{"a", "b", "c"}[r.Intn(3)]
	switch r.Intn(16) {
	case 0:
		return desc("sec", v)
	case 1:
		return desc("min", v)
	case 2:
		return desc([]string{"hour", "day", "week", "month", "year"}[r.Intn(5)], v)
	case 3:
		return desc("k1", "v1", "k2", v)
	case 4:
		return desc("k1", "v1", "k2", "special")
	case 5:
		return desc("k1", []string{"v1", "v2"}[r.Intn(2)]) // no rule at this depth
	case 6:
		return desc("wild", "pre"+v)
	case 7:
		return desc("shared", "files/"+v)
	case 8:
		return desc([]string{"unl", "zero", "nothing"}[r.Intn(3)], v)
	case 9:
		return desc("shadow", v)
	case 10:
		return desc("quota", v)
	case 11:
		return desc([]string{"named", "replacer"}[r.Intn(2)], v)
	case 12:
		d := desc("min", "o"+v)
		d.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
		return d
	case 13:
		return desc("k1", "v1", "k2", v, "k3", v) // deeper than any rule
	}
	return desc("min", v)
}

type diffCase struct {
	name   string
	config string
	env    map[string]string // for both servers
	steps  int
	next   func(r *rand.Rand) *rlpb.RateLimitRequest
}

func TestDifferential(t *testing.T) {
	addr := redisserver.Start(t)
	headers := map[string]string{"LIMIT_RESPONSE_HEADERS_ENABLED": "true"}
	cases := []diffCase{
		{"one descriptor a request", diffConfig, headers, 400, func(r *rand.Rand) *rlpb.RateLimitRequest {
			return &rlpb.RateLimitRequest{Domain: "diff", Descriptors: []*rlcommon.RateLimitDescriptor{diffDescriptor(r)}}
		}},
		// With STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT the reference
		// stops counting a request's other descriptors when one is over
		// its limit, as this server always does.
		{"several descriptors a request", diffConfig, map[string]string{"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true"}, 300, func(r *rand.Rand) *rlpb.RateLimitRequest {
			req := &rlpb.RateLimitRequest{Domain: "diff"}
			for n := 2 + r.Intn(3); n > 0; {
				// There a shadow or quota mode rule over its limit stops
				// the others counting (TestReferenceDifferences).
				if d := diffDescriptor(r); d.Entries[0].Key != "shadow" && d.Entries[0].Key != "quota" {
					req.Descriptors = append(req.Descriptors, d)
					n--
				}
			}
			return req
		}},
	}
	for n, ys := range readmeExamples(t) {
		for i, y := range ys {
			cases = append(cases, generated(fmt.Sprintf("README example %d.%d", n, i+1), y, headers, t))
		}
	}
	for _, f := range []string{"basic_config.yaml", "wildcard.yaml", "share_threshold.yaml", "shadowmode_config.yaml"} {
		cases = append(cases, generated("the reference's test/config/"+f, readReferenceFile(t, "test/config/"+f), headers, t))
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := startReference(t, addr, map[string]string{"c.yaml": c.config}, c.env)
			ours := startServer(t, addr, map[string]string{"c.yaml": c.config}, c.env)
			compareServers(t, rdb, ref, ours, c)
		})
	}
}

// compareServers runs c on both servers from an empty Redis, again when
// too few answers could be compared (steps kept straddling windows).
func compareServers(t *testing.T, rdb *redis.Client, ref *refServer, ours *testServer, c diffCase) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		if err := rdb.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		seed := time.Now().UnixNano()
		compared, all := runDiff(t, ref, ours, c, rand.New(rand.NewSource(seed)))
		if t.Failed() {
			t.Logf("seed %d", seed)
			return
		}
		if compared*10 >= all*9 {
			t.Logf("%d of %d answers compared", compared, all)
			return
		}
		if attempt == 3 {
			t.Fatalf("only %d of %d answers could be compared, three times: steps keep straddling window boundaries", compared, all)
		}
	}
}

// generated is a case that asks, at random, descriptors made from the
// configuration's own tree (see treeCase).
func generated(name, yaml string, env map[string]string, t *testing.T) diffCase {
	f, err := parseFile("g.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := treeCase(name, 120, f)
	c.config, c.env = yaml, env
	return c
}

// treeCase asks descriptors made from the files' trees: each rule's path
// with its values (a wildcard completed, a free value from a small
// pool), a level short, a level too deep, and a wrong value.
func treeCase(name string, steps int, files ...*yamlFile) diffCase {
	type path struct {
		domain string
		kv     []string
	}
	var paths []path
	var walk func(domain string, prefix []string, ds []yamlDescriptor)
	walk = func(domain string, prefix []string, ds []yamlDescriptor) {
		for _, d := range ds {
			p := append(append([]string(nil), prefix...), d.key, d.value)
			paths = append(paths, path{domain, p})
			walk(domain, p, d.descriptors)
		}
	}
	for _, f := range files {
		walk(f.domain, nil, f.descriptors)
	}
	return diffCase{name: name, steps: steps, next: func(r *rand.Rand) *rlpb.RateLimitRequest {
		pt := paths[r.Intn(len(paths))]
		p := append([]string(nil), pt.kv...)
		for i := 1; i < len(p); i += 2 {
			switch v := p[i]; {
			case v == "" || r.Intn(8) == 0:
				p[i] = []string{"x", "y", "50.0.0.5", "value1"}[r.Intn(4)]
			case strings.HasSuffix(v, "*"):
				p[i] = strings.TrimSuffix(v, "*") + []string{"", "1", "22"}[r.Intn(3)]
			}
		}
		switch r.Intn(8) {
		case 0:
			if len(p) > 2 {
				p = p[:len(p)-2]
			}
		case 1:
			p = append(p, "extra", "e")
		}
		return &rlpb.RateLimitRequest{Domain: pt.domain, Descriptors: []*rlcommon.RateLimitDescriptor{desc(p...)}}
	}}
}

// runDiff asks both servers c.steps requests and compares the answers; it
// returns how many descriptor answers it compared, of how many.
func runDiff(t *testing.T, ref *refServer, ours *testServer, c diffCase, r *rand.Rand) (compared, all int) {
	t.Helper()
	dirty := map[rlpb.RateLimitResponse_RateLimit_Unit]time.Time{} // not compared before then
	for step := 0; step < c.steps && !t.Failed(); step++ {
		req := c.next(r)
		guard()
		t0 := time.Now()
		rr := ref.call(t, req)
		or := ours.call(t, req)
		t1 := time.Now()
		where := fmt.Sprintf("step %d, %v", step, req)
		if len(rr.Statuses) != len(or.Statuses) {
			t.Fatalf("%s: %d statuses from the reference, %d here", where, len(rr.Statuses), len(or.Statuses))
		}
		clean := true
		for i := range rr.Statuses {
			all++
			rs, os := rr.Statuses[i], or.Statuses[i]
			unit := rs.GetCurrentLimit().GetUnit()
			if !proto.Equal(rs.CurrentLimit, os.CurrentLimit) {
				t.Errorf("%s, descriptor %d: limit %v from the reference, %v here", where, i, rs.CurrentLimit, os.CurrentLimit)
				continue
			}
			if rs.CurrentLimit != nil {
				p := int64(unitPeriods[unit] / time.Second)
				if t0.Unix()/p != t1.Unix()/p {
					dirty[unit] = time.Unix((t1.Unix()/p+1)*p, 0)
				}
				if t0.Before(dirty[unit]) {
					clean = false
					continue
				}
				if (rs.DurationUntilReset == nil) != (os.DurationUntilReset == nil) || rs.DurationUntilReset != nil && (!resetIn(rs.DurationUntilReset.GetSeconds(), p, t0, t1) || !resetIn(os.DurationUntilReset.GetSeconds(), p, t0, t1)) {
					t.Errorf("%s, descriptor %d: reset %v from the reference, %v here, want the seconds to the window's end", where, i, rs.DurationUntilReset, os.DurationUntilReset)
				}
			} else if rs.DurationUntilReset != nil || os.DurationUntilReset != nil {
				t.Errorf("%s, descriptor %d: reset %v from the reference, %v here", where, i, rs.DurationUntilReset, os.DurationUntilReset)
			}
			if rs.Code != os.Code || rs.LimitRemaining != os.LimitRemaining {
				t.Errorf("%s, descriptor %d: %v %d remaining from the reference, %v %d here", where, i, rs.Code, rs.LimitRemaining, os.Code, os.LimitRemaining)
			}
			compared++
		}
		if !clean {
			continue
		}
		if rr.OverallCode != or.OverallCode {
			t.Errorf("%s: overall %v from the reference, %v here", where, rr.OverallCode, or.OverallCode)
		}
		rh, oh := headerMap(rr), headerMap(or)
		for _, k := range []string{"RateLimit-Limit", "RateLimit-Remaining"} {
			if rh[k] != oh[k] {
				t.Errorf("%s: %s %q from the reference, %q here", where, k, rh[k], oh[k])
			}
		}
		if (rh["RateLimit-Reset"] == "") != (oh["RateLimit-Reset"] == "") {
			t.Errorf("%s: RateLimit-Reset %q from the reference, %q here", where, rh["RateLimit-Reset"], oh["RateLimit-Reset"])
		}
	}
	return compared, all
}

// guard waits past a second's boundary that is less than 30 ms away, so
// that a step is rarely counted in two windows.
func guard() {
	if left := time.Second - time.Duration(time.Now().Nanosecond()); left < 30*time.Millisecond {
		time.Sleep(left + time.Millisecond)
	}
}

// resetIn reports whether s is the seconds to the end of a window of p
// seconds at some second from t0 to t1.
func resetIn(s, p int64, t0, t1 time.Time) bool {
	for u := t0.Unix(); u <= t1.Unix(); u++ {
		if s == p-u%p {
			return true
		}
	}
	return false
}

func headerMap(r *rlpb.RateLimitResponse) map[string]string {
	m := map[string]string{}
	for _, h := range r.ResponseHeadersToAdd {
		m[h.Key] = h.Value
	}
	return m
}
