package main

import (
	"fmt"
	"slices"
	"strings"
)

// check is one line of the targets table: a target of issue 25 or 17 (or
// one of issue 10's that still holds: the deny cache, allocations) at one
// setting of this run.
type check struct {
	target, setting, got, bound string
	met                         bool
	miss                        string // by how much, when missed
	unmeasured                  bool   // not met because the run has no number for it
}

// over says how far got is past bound, as a percentage of bound.
func over(got, bound float64) string {
	return fmt.Sprintf("%.0f%% over", 100*(got-bound)/bound)
}

// under says how far got falls short of bound.
func under(got, bound float64) string {
	return fmt.Sprintf("%.0f%% short", 100*(bound-got)/bound)
}

// targets evaluates every target of the issue that this run measures, at
// 64 goroutines unless a target says otherwise.
func targets(r *results) []check {
	const g = 64
	scenarios, _ := r.groups()
	var out []check
	atMost := func(target, setting string, got, bound float64, unit string) {
		c := check{target: target, setting: setting, got: fmt.Sprintf("%.1f%s", got, unit), bound: fmt.Sprintf("≤ %.1f%s", bound, unit), met: got <= bound}
		if !c.met {
			c.miss = over(got, bound)
		}
		out = append(out, c)
	}
	atLeast := func(target, setting string, got, bound float64) {
		c := check{target: target, setting: setting, got: ratio(got), bound: fmt.Sprintf("≥ %s", ratio(bound)), met: got >= bound}
		if !c.met {
			c.miss = under(got, bound)
		}
		out = append(out, c)
	}

	notMeasured := func(target, setting, bound, why string) {
		out = append(out, check{target: target, setting: setting, got: "–", bound: bound, miss: "not measured (" + why + ")", unmeasured: true})
	}

	// Issue 25: coalescing a hot key, and the fastest client path. The
	// default rows (redlimit_gcra, redlimit_gcra_rueidis) coalesce; the
	// "_nobatch" rows, ratelimit.WithoutCoalescing, are GCRA as it was.
	const nobatch = "redlimit_gcra_nobatch"
	if u, ok := r.perSecond("hot-allow", g, "ulule_limiter"); ok {
		if v, ok := r.perSecond("hot-allow", g, "redlimit_gcra"); ok {
			atLeast("hot key, all admitted: ratelimit GCRA, default options, ≥ 3× ulule's decisions/s", "hot-allow, gcra", v/u, 3)
		}
	}
	if u, ok := r.get("hot-allow", g, "ulule_limiter", "p99-us"); ok {
		if v, ok := r.get("hot-allow", g, "redlimit_gcra", "p99-us"); ok {
			c := check{target: "hot key, all admitted: p99 ≤ ulule's", setting: "hot-allow, gcra",
				got: fmt.Sprintf("%.0f µs", v), bound: fmt.Sprintf("≤ %.0f µs", u), met: v <= u}
			if !c.met {
				c.miss = over(v, u)
			}
			out = append(out, c)
		}
	}
	if v, ok := r.get("hot-allow", g, "redlimit_gcra", "srv-cpu-us/op"); ok {
		atMost("hot key: Redis CPU per decision ≤ 2 µs", "hot-allow, gcra", v, 2, " µs")
	}
	if rounds, over := r.overAdmitted(); rounds > 0 {
		c := check{target: "no over-admission: every redlimit row of TestAccuracy, 64 goroutines on one key", setting: fmt.Sprintf("%d rounds", rounds),
			got: fmt.Sprintf("%d over", over), bound: "0", met: over == 0}
		if !c.met {
			c.miss = "over-admitted"
		}
		out = append(out, c)
	}
	if v, ok := r.perSecond("distinct", g, "redlimit_gcra"); ok {
		if was, ok := r.perSecond("distinct", g, nobatch); ok {
			atLeast("100 000 distinct keys: ≥ 0.95× ratelimit GCRA without coalescing", "distinct, gcra", v/was, 0.95)
		} else {
			notMeasured("100 000 distinct keys: ≥ 0.95× ratelimit GCRA without coalescing", "distinct, gcra", "≥ 0.95×", "no "+nobatch+" row")
		}
	}
	for _, s := range scenarios {
		v, ok := r.get(s, 1, "redlimit_gcra", "p50-us")
		if !ok {
			continue
		}
		const target = "one goroutine: p50 within 5% of ratelimit GCRA without coalescing"
		was, ok := r.get(s, 1, nobatch, "p50-us")
		if !ok {
			notMeasured(target, s+", gcra", "≤ 1.05× its p50", "no "+nobatch+" row")
			continue
		}
		c := check{target: target, setting: s + ", gcra", got: fmt.Sprintf("%.0f µs", v), bound: fmt.Sprintf("≤ %.0f µs", 1.05*was), met: v <= 1.05*was}
		if !c.met {
			c.miss = over(v, 1.05*was)
		}
		out = append(out, c)
	}
	for _, s := range scenarios {
		for _, client := range []string{"rueidis", "valkey"} {
			v, ok := r.perSecond(s, g, "redlimit_gcra_"+client)
			if !ok {
				continue
			}
			if b, ok := r.perSecond(s, g, "bindings_gcra_"+client); ok {
				atLeast("ratelimit over rueidis / valkey-go ≥ 0.9× the client's own generated bindings", s+", gcra_"+client, v/b, 0.9)
			}
			if u, ok := r.perSecond(s, g, "ulule_limiter"); ok && client == "rueidis" {
				atLeast("ratelimit over rueidis ≥ 1.1× ulule's decisions/s", s+", gcra_rueidis", v/u, 1.1)
			}
		}
	}

	// Issue 33: batching calls for other keys. 100 000 distinct keys at
	// 64 goroutines; the "_nobatch" rows are ratelimit.WithoutCoalescing.
	if u, ok := r.perSecond("distinct", keysG, "ulule_limiter"); ok {
		for _, c := range keyClients {
			if v, ok := r.perSecond("distinct", keysG, "redlimit_gcra"+c.suffix); ok {
				atLeast("100 000 distinct keys: ratelimit GCRA ≥ 2.5× ulule's decisions/s", "distinct, gcra"+c.suffix, v/u, 2.5)
			}
		}
	}
	for _, c := range keyClients {
		if v, ok := r.get("distinct", keysG, "redlimit_gcra"+c.suffix, "srv-cpu-us/op"); ok {
			atMost("100 000 distinct keys: Redis CPU per GCRA decision ≤ 3 µs", "distinct, gcra"+c.suffix, v, 3, " µs")
		}
	}
	for _, c := range keyClients {
		const target = "100 000 distinct keys: every algorithm ≥ 1.5× its own row without batching"
		var missing []string
		worst, worstV, measured := "", 0.0, false
		for _, a := range algorithms {
			v, ok := r.perSecond("distinct", keysG, "redlimit_"+a+c.suffix)
			if !ok {
				continue
			}
			measured = true
			twin := "redlimit_" + a + "_nobatch" + c.suffix
			w, ok := r.perSecond("distinct", keysG, twin)
			if !ok {
				missing = append(missing, twin)
				continue
			}
			if worst == "" || v/w < worstV {
				worst, worstV = a, v/w
			}
		}
		switch {
		case !measured:
		case len(missing) > 0:
			notMeasured(target, "distinct, "+c.name, "≥ 1.50×", "no "+strings.Join(missing, ", "))
		default:
			atLeast(target, "distinct, "+c.name+", least: "+worst, worstV, 1.5)
		}
	}
	if u, ok := r.httpMedian("ulule_ips", "rps"); ok && u > 0 {
		if v, ok := r.httpMedian("redlimit_ips", "rps"); ok {
			atLeast("HTTP from 100 000 client addresses (X-Forwarded-For): ≥ 2× ulule's requests/s", "redlimit_ips", v/u, 2)
		}
	}

	// Issue 25, 3: the outbound recipe.
	if m := r.outbound[outboundRecipe]; len(m["worst"]) > 0 {
		n, _ := median(m["n"])
		worst := slices.Max(m["worst"])
		c := check{target: "outbound recipe: at most N calls in any second, every round", setting: outboundRecipe,
			got: fmt.Sprintf("%.0f", worst), bound: fmt.Sprintf("≤ %.0f", n), met: worst <= n}
		if !c.met {
			c.miss = over(worst, n)
		}
		out = append(out, c)
		rate, _ := median(m["rate"])
		atLeast("outbound recipe: ≥ 0.95 N calls a second sustained", outboundRecipe, rate/n, 0.95)
	}

	// Issue 17, 1: the server cost of a decision.
	for _, s := range scenarios {
		for _, a := range []string{"gcra", "token_bucket"} {
			for _, client := range []string{"_ap", "_rueidis"} {
				if v, ok := r.get(s, g, "redlimit_"+a+client, "srv-cpu-us/op"); ok {
					atMost("Redis CPU per decision over a pipelining client: GCRA and token bucket ≤ 6 µs", s+", "+a+client, v, 6, " µs")
				}
			}
		}
	}
	for _, s := range scenarios {
		ulule, ok := r.get(s, g, "ulule_limiter", "srv-cpu-us/op")
		if !ok {
			continue
		}
		worst, worstV := "", 0.0
		for _, a := range algorithms {
			if v, ok := r.get(s, g, "redlimit_"+a, "srv-cpu-us/op"); ok && v > worstV {
				worst, worstV = a, v
			}
		}
		if worst != "" {
			atMost("Redis CPU per decision unpipelined: every script ≤ ulule's", s+", worst: "+worst, worstV, ulule, " µs")
		}
		if u, ok := r.perSecond(s, g, "ulule_limiter"); ok {
			for _, a := range []string{"gcra", "fixed_window"} {
				if v, ok := r.perSecond(s, g, "redlimit_"+a); ok {
					atLeast("decisions/s unpipelined: GCRA and fixed window ≥ ulule's", s+", "+a, v/u, 1)
				}
			}
		}
	}

	// Issue 17, 2: memory per key.
	ulule, uok := median(r.memory["ulule_limiter"]["info-B/key"])
	rr, rok := median(r.memory["redis_rate"]["info-B/key"])
	if v, ok := median(r.memory["redlimit_gcra"]["info-B/key"]); ok {
		if rok {
			atMost("memory per key: GCRA ≤ redis_rate's", "gcra", v, rr, " B")
		}
		if uok {
			atMost("memory per key: GCRA ≤ 1.2× ulule's", "gcra", v, 1.2*ulule, " B")
		}
	}

	// Issue 17, 3: over rueidis and valkey-go, against redis_rate.
	for _, s := range scenarios {
		rr, ok := r.perSecond(s, g, "redis_rate")
		rr99, ok99 := r.get(s, g, "redis_rate", "p99-us")
		if !ok {
			continue
		}
		worst, worstV := "", 0.0
		for _, a := range algorithms {
			if v, ok := r.perSecond(s, g, "redlimit_"+a+"_rueidis"); ok && (worst == "" || v < worstV) {
				worst, worstV = a, v
			}
		}
		for _, impl := range []string{"redlimit_gcra_rueidis", "redlimit_gcra_valkey"} {
			if v, ok := r.perSecond(s, g, impl); ok {
				atLeast("over rueidis / valkey-go at 64 goroutines: ≥ 3× redis_rate's decisions/s", s+", "+strings.TrimPrefix(impl, "redlimit_"), v/rr, 3)
			}
			if v, ok := r.get(s, g, impl, "p99-us"); ok && ok99 {
				c := check{target: "over rueidis / valkey-go: p99 below redis_rate's", setting: s + ", " + strings.TrimPrefix(impl, "redlimit_"),
					got: fmt.Sprintf("%.0f µs", v), bound: fmt.Sprintf("< %.0f µs", rr99), met: v < rr99}
				if !c.met {
					c.miss = over(v, rr99)
				}
				out = append(out, c)
			}
		}
		if worst != "" && worst != "gcra" {
			atLeast("over rueidis / valkey-go at 64 goroutines: ≥ 3× redis_rate's decisions/s", s+", slowest: "+worst+"_rueidis", worstV/rr, 3)
		}
	}

	// Issue 17, 4: behind a real HTTP handler, against ulule's middleware.
	if u, ok := r.httpMedian("ulule", "rps"); ok && u > 0 {
		if v, ok := r.httpMedian("redlimit", "rps"); ok {
			atLeast("HTTP requests/s: ≥ 1.0× ulule's unpipelined", "redlimit", v/u, 1)
		}
		for _, row := range []string{"redlimit_ap", "redlimit_rueidis"} {
			if v, ok := r.httpMedian(row, "rps"); ok {
				atLeast("HTTP requests/s: ≥ 2× ulule's pipelined", row, v/u, 2)
			}
		}
	}

	// Issue 10: the deny cache under a flood.
	for _, gc := range []int{1, 16, 64} {
		rr, ok := r.perSecond("hot-deny", gc, "redis_rate")
		if !ok {
			continue
		}
		worst, worstV, cmds, measured := "", 0.0, 0.0, false
		for _, a := range algorithms {
			impl := "redlimit_" + a + "_cache"
			if v, ok := r.perSecond("hot-deny", gc, impl); ok && (worst == "" || v < worstV) {
				worst, worstV = a, v
			}
			// The benchmark reports cmds/cached only when some decision
			// came from the cache: no metric is no evidence of zero.
			if c, ok := r.get("hot-deny", gc, impl, "cmds/cached"); ok {
				measured = true
				cmds = max(cmds, c)
			}
		}
		if worst != "" {
			setting := fmt.Sprintf("hot-deny, %d goroutine%s, slowest: %s", gc, plural(gc), worst)
			atLeast("deny cache under a flood: ≥ 10× redis_rate's decisions/s", setting, worstV/rr, 10)
			c := check{target: "deny cache: Redis commands per cached denial", setting: fmt.Sprintf("hot-deny, %d goroutine%s, most of six", gc, plural(gc)),
				got: fmt.Sprintf("%g", cmds), bound: "0", met: measured && cmds == 0}
			switch {
			case !measured:
				c.got, c.miss, c.unmeasured = "–", "not measured (no cmds/cached metric)", true
			case !c.met:
				c.miss = "not zero"
			}
			out = append(out, c)
		}
	}

	// Issue 10: allocations against redis_rate, at every scenario and caller count.
	_, gs := r.groups()
	for _, s := range scenarios {
		for _, unit := range []string{"allocs/op", "B/op"} {
			worst, worstRatio, worstV, rrV := "", 0.0, 0.0, 0.0
			for _, gc := range gs {
				rr, ok := r.get(s, gc, "redis_rate", unit)
				if !ok || rr == 0 {
					continue
				}
				for _, a := range algorithms {
					if v, ok := r.get(s, gc, "redlimit_"+a, unit); ok && v/rr > worstRatio {
						worst, worstRatio, worstV, rrV = fmt.Sprintf("%s at %d", a, gc), v/rr, v, rr
					}
				}
			}
			if worst == "" {
				continue
			}
			name := map[string]string{"allocs/op": "allocations", "B/op": "bytes"}[unit]
			c := check{target: "Go " + name + " per decision ≤ redis_rate's", setting: s + ", most: " + worst,
				got: fmt.Sprintf("%.0f", worstV), bound: fmt.Sprintf("≤ %.0f", rrV), met: worstV <= rrV}
			if !c.met {
				c.miss = over(worstV, rrV)
			}
			out = append(out, c)
		}
	}
	return out
}

func targetsSection(r *results) string {
	var b strings.Builder
	b.WriteString("| target | setting | this run | bound | verdict |\n| --- | --- | ---: | ---: | --- |\n")
	for _, c := range targets(r) {
		verdict := "met"
		switch {
		case c.unmeasured:
			verdict = "**" + c.miss + "**"
		case !c.met:
			verdict = "**missed**, " + c.miss
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.target, c.setting, c.got, c.bound, verdict)
	}
	return b.String()
}

// overAdmitted counts TestAccuracy's rounds of redlimit's rows, and those
// that admitted more than the algorithm allows.
func (r *results) overAdmitted() (rounds, over int) {
	for _, a := range r.accuracy {
		if !strings.HasPrefix(a.limiter, "redlimit_") {
			continue
		}
		rounds++
		if a.admitted > a.allowed {
			over++
		}
	}
	return rounds, over
}
