package luatest

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// notIntegers are stored values that are not integers as the scripts write
// them: Lua's tonumber would take most of them.
var notIntegers = []string{"", "abc", "nan", "-nan", "inf", "-inf", "1.5", "1e3", "0x10", " 5", "5 ", "+5",
	"007", "-0", "5\x00", "99999999999999999999", "-1"}

// stateLayouts says, for each script whose state is one string, its tag,
// how the rest splits into fields (a time of fixed width, then numbers,
// with the separators that follow each field but the last), the least
// value above what the script could have written in each field at the
// server's clock server, and the greatest value below it where a field's
// least value is not 0 ("" where it is: there is nothing below).
type stateLayout struct {
	tag   string
	re    *regexp.Regexp
	seps  []string
	above func(f []string, server int64) []string
	below func(f []string) []string
}

// gcraShort is GCRA's short form: the TAT modulo 1e10, read as the one from
// maxSkew and a second behind TIME on, then the interval in 8 digits
// (1..99999999); the write's clock, tat - interval, is no later than TIME
// + maxSkew.
var gcraShort = stateLayout{"2", gcraShortRE, []string{""}, func(f []string, server int64) []string {
	interval, _ := strconv.ParseInt(f[1], 10, 64)
	return []string{fmt.Sprintf("%010d", (server+maxSkew+interval+1)%1e10), "100000000"}
}, func([]string) []string {
	return []string{"", "00000000"}
}}

// gcraSettled is GCRA's settled form, 'g<tat><interval>=<lead>+<debt>':
// the write's clock, tat - lead, no later than TIME + maxSkew; the interval
// 1..1e14; the lead past its debt at most 1e15, the debt at most the lead.
var gcraSettled = stateLayout{"g", gcraSettledRE, []string{"", "=", "+"}, func(f []string, server int64) []string {
	lead, _ := strconv.ParseInt(f[2], 10, 64)
	debt, _ := strconv.ParseInt(f[3], 10, 64)
	return []string{fmt.Sprintf("%016d", server+maxSkew+lead+1), "100000000000001", strconv.FormatInt(debt+1e15+1, 10), strconv.FormatInt(lead+1, 10)}
}, func([]string) []string {
	return []string{"", "0", "", ""}
}}

// leakySettled is the leaky bucket's settled form,
// 'l<ts><unit>=<water>+<debt>': ts no later than TIME + maxSkew; unit
// 1..1e14; the water past its debt at most 1e15, the debt at most the
// water and 1e15.
var leakySettled = stateLayout{"l", leakyBucketSettled, []string{"", "=", "+"}, func(f []string, server int64) []string {
	water, _ := strconv.ParseInt(f[2], 10, 64)
	debt, _ := strconv.ParseInt(f[3], 10, 64)
	return []string{fmt.Sprintf("%016d", server+maxSkew+1), "100000000000001", strconv.FormatInt(debt+1e15+1, 10), strconv.FormatInt(water+1, 10)}
}, func([]string) []string {
	return []string{"", "0", "", ""}
}}

var stateLayouts = map[string]stateLayout{
	// ts no later than TIME + maxSkew, tokens 0..1e9.
	"token_bucket": {"-", tokenBucketState, []string{""}, func(_ []string, server int64) []string {
		return []string{fmt.Sprintf("%016d", server+maxSkew+1), "1000000001"}
	}, func([]string) []string {
		return []string{"", ""}
	}},
	// ts no later than TIME + maxSkew, unit 1..1e14, level = unit + more
	// 1..1e15.
	"leaky_bucket": {"l", leakyBucketState, []string{"", "/"}, func(f []string, server int64) []string {
		unit, _ := strconv.ParseInt(f[1], 10, 64)
		return []string{fmt.Sprintf("%016d", server+maxSkew+1), "100000000000001", strconv.FormatInt(1e15-unit+1, 10)}
	}, func([]string) []string {
		return []string{"", "0", ""}
	}},
	// The TAT is bounded through the write's clock, 0 <= tat - lead <=
	// TIME + maxSkew; interval 1..1e14, lead = interval + more 1..1e15.
	"gcra": {"g", gcraStateRE, []string{"", "/"}, gcraAbove, gcraBelow},
	// multi.lua keeps gcra.lua's state at each key.
	"multi": {"g", gcraStateRE, []string{"", "/"}, gcraAbove, gcraBelow},
	// GCRA's short form, for gcra and multi.
	"gcra short": gcraShort,
	// t no later than TIME + maxSkew, n 1..1e9.
	"fixed_window": {"1", fixedWindowState, []string{""}, func(_ []string, server int64) []string {
		return []string{fmt.Sprintf("%013d", (server+maxSkew)/1000+1), "1000000001"}
	}, func([]string) []string {
		return []string{"", "0"}
	}},
	// The newest call, s + d, no later than TIME + maxSkew, and d below
	// 1e14 µs; cur 0..1e15 (0 and past 1e9 only a settle writes), prev
	// 0..2e15.
	"sliding_window_counter": {"c", slidingWindowCounterState, []string{"", "/", "/"}, func(f []string, server int64) []string {
		d, _ := strconv.ParseInt(f[1], 10, 64)
		return []string{fmt.Sprintf("%013d", (server+maxSkew)/1000-d+1), "100000000000", "1000000000000001", "2000000000000001"}
	}, func([]string) []string {
		return []string{"", "", "", ""}
	}},
}

func gcraAbove(f []string, server int64) []string {
	interval, _ := strconv.ParseInt(f[1], 10, 64)
	more, _ := strconv.ParseInt(f[2], 10, 64)
	return []string{fmt.Sprintf("%016d", server+maxSkew+interval+more+1), "100000000000001", strconv.FormatInt(1e15-interval+1, 10)}
}

func gcraBelow(f []string) []string {
	interval, _ := strconv.ParseInt(f[1], 10, 64)
	more, _ := strconv.ParseInt(f[2], 10, 64)
	return []string{fmt.Sprintf("%016d", interval+more-1), "0", ""}
}

func joinState(tag string, f, seps []string) string {
	var b strings.Builder
	b.WriteString(tag)
	for i, x := range f {
		b.WriteString(x)
		if i < len(seps) && i < len(f)-1 {
			b.WriteString(seps[i])
		}
	}
	return b.String()
}

// TestStateIsCheckedLikeInput corrupts a key that holds real state, one
// field at a time, every way a stored number can be wrong, and adds and
// removes fields: every call then answers BADSTATE, sends no write, and
// leaves the key exactly as it was, TTL included.
func TestStateIsCheckedLikeInput(t *testing.T) {
	for _, name := range scenario.Scripts() {
		t.Run(name, func(t *testing.T) {
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			r, keys, argv := firstWrite(t, name, src, 0)
			// Each corruption meets the first write's call and the calls
			// that only look: a peek, or for concurrency, which has none,
			// every other op on the same lease.
			calls := [][]string{argv}
			if i := scenario.SpecOf(name).CostIndex(); i >= 0 {
				peek := append([]string(nil), argv...)
				peek[i] = "0"
				calls = append(calls, peek)
			} else if name == "concurrency" {
				for _, op := range []string{"renew", "release"} {
					a := append([]string(nil), argv...)
					a[0] = op
					calls = append(calls, a)
				}
			}
			key := keys[0]
			good := r.get(key).clone()
			// try meets v with calls, or with only the calls given.
			try := func(what string, v *value, only ...[]string) {
				t.Helper()
				cs := calls
				if only != nil {
					cs = only
				}
				for _, a := range cs {
					c := r.Clone()
					c.data[key] = v.clone()
					expectBadArg(t, c, src, keys, a, "BADSTATE ")
					for _, cmd := range c.Commands() {
						if writes[strings.ToUpper(strings.Fields(cmd)[0])] {
							t.Errorf("%s: sent %q", what, cmd)
						}
					}
				}
			}
			switch good.kind {
			case "string":
				// A GCRA state in either form: the one written, and the
				// other form of the same state (the long one of a short
				// state reads the same).
				states := []string{good.str}
				if stateLayouts[name].tag == "g" {
					tat, interval, lead, err := parseGCRA(good.str, r.Now())
					if err != nil {
						t.Fatal(err)
					}
					// And the settled form with no debt, which reads the same.
					states = append(states, scenario.GCRALongState(tat, interval, lead), scenario.GCRASettledState(tat, interval, lead, 0))
				}
				if m := leakyBucketState.FindStringSubmatch(good.str); m != nil && name == "leaky_bucket" {
					// And the leaky bucket's settled form with no debt,
					// which reads the same.
					ts, _ := strconv.ParseInt(m[1], 10, 64)
					unit, _ := strconv.ParseInt(m[2], 10, 64)
					more, _ := strconv.ParseInt(m[3], 10, 64)
					states = append(states, scenario.LeakyBucketSettledState(ts, unit, unit+more, 0))
				}
				for _, st := range states {
					corruptString(t, name, r.Now(), st, good, try)
				}
			case "zset":
				if name == "concurrency" {
					leaseCorruptions(good, argv, try)
					break
				}
				var newest string
				for m := range good.zset {
					newest = max(newest, m)
				}
				s := good.zset[newest]
				// The members of earlier versions ('<us>-<n>') are refused too:
				// they look like lease ids.
				us := strings.Split(newest, ":")[0]
				for _, m := range []string{"alice", "x:1", newest + ":1", newest + "x", "0" + newest,
					us + ":0", us + ":10001", us + ":01", us + "-1", us + ":1:"} {
					v := good.clone()
					delete(v.zset, newest)
					v.zset[m] = s
					try(fmt.Sprintf("newest member %q", m), v)
				}
				for _, bad := range []float64{s + 1, s - 0.5, -1} {
					v := good.clone()
					v.zset[newest] = bad
					try(fmt.Sprintf("newest scored %v", bad), v)
				}
				v := good.clone()
				v.zset["alice"] = 1
				try("a foreign oldest member", v)
				v = good.clone()
				for i := 0; len(v.zset) <= 10000; i++ {
					v.zset[fmt.Sprintf("%d:%d", int64(s), 100+i)] = s
				}
				try("10001 members", v)
				// A denial reads the (limit-want+1)-th newest member for its
				// wait: with limit 3 and want 1, in a log of four live
				// members, the second oldest, between two valid ones.
				deny := append([]string(nil), argv...)
				deny[0], deny[2] = "3", "1"
				peek := append([]string(nil), deny...)
				peek[2] = "0"
				at := func(us int64) string { return strconv.FormatInt(us, 10) }
				mid := int64(s) - 2
				for _, m := range []string{"alice", "x:1", at(mid) + ":0", at(mid) + ":10001", at(mid) + ":01",
					"0" + at(mid) + ":1", at(mid-1) + ":1", at(mid) + ":1x", at(mid) + "-1"} {
					v := &value{kind: "zset", zset: map[string]float64{}, expireAt: good.expireAt}
					for us := mid - 1; us <= int64(s); us++ {
						v.zset[at(us)+":1"] = float64(us)
					}
					delete(v.zset, at(mid)+":1")
					v.zset[m] = float64(mid)
					try(fmt.Sprintf("the member a denial waits for %q", m), v, deny, peek)
				}
			}
		})
	}
}

// leaseCorruptions spoils a set of leases every way concurrency.lua checks:
// the oldest and newest members (a member that is no lease id, a score
// that is no whole µs or lies past the latest expiry a lease can have),
// the lease the call names, the lease a denied acquire waits for and the
// next newest on a release of the newest (both between valid oldest and
// newest members), and a set over 10000 members. argv is the acquire that
// wrote good.
func leaseCorruptions(good *value, argv []string, try func(string, *value, ...[]string)) {
	var newest, oldest string
	for m, s := range good.zset {
		if newest == "" || s > good.zset[newest] {
			newest = m
		}
		if oldest == "" || s < good.zset[oldest] {
			oldest = m
		}
	}
	s := good.zset[newest]
	// '<digits>-<digits>': an earlier sliding_window_log.lua's member.
	for _, m := range []string{"", "a b", "x\x00", strings.Repeat("a", 65), "é", fmt.Sprintf("%d-1", int64(good.zset[newest]))} {
		v := good.clone()
		delete(v.zset, newest)
		v.zset[m] = s
		try(fmt.Sprintf("newest member %q", m), v)
		v = good.clone()
		v.zset[m] = 1
		try(fmt.Sprintf("oldest member %q", m), v)
	}
	// s+86460e6+1 is past a day and 60 s after any clock the call may have.
	for _, bad := range []float64{s + 0.5, -1, s + 86460e6 + 1e6} {
		v := good.clone()
		v.zset[newest] = bad
		try(fmt.Sprintf("newest scored %v", bad), v)
	}
	v := good.clone()
	v.zset[oldest] = 0.5
	try("oldest scored 0.5", v)
	// The named lease in the middle of three: only ZSCORE reads it.
	v = good.clone()
	v.zset["first"] = 1
	v.zset["last"] = s + 1
	v.zset[newest] = s - 0.5
	try("the named lease scored off a whole µs", v)
	v = good.clone()
	for i := 0; len(v.zset) <= 10000; i++ {
		v.zset[fmt.Sprintf("l%d", i)] = s
	}
	try("10001 members", v)

	// spoiled is members with one of them, m, spoiled every way in turn: no
	// lease id, or a score off a whole µs (still between its neighbours).
	lease := argv[1]
	type corruption struct {
		what string
		v    *value
	}
	spoiled := func(members map[string]float64, m string) []corruption {
		var out []corruption
		for _, id := range []string{"", "a b", "x\x00", strings.Repeat("a", 65), "é", "1767225600000000-1"} {
			v := &value{kind: "zset", zset: maps.Clone(members), expireAt: good.expireAt}
			delete(v.zset, m)
			v.zset[id] = members[m]
			out = append(out, corruption{fmt.Sprintf("%q", id), v})
		}
		v := &value{kind: "zset", zset: maps.Clone(members), expireAt: good.expireAt}
		v.zset[m] -= 0.5
		out = append(out, corruption{"scored off a whole µs", v})
		return out
	}
	// An acquire denied at limit 3 with four live leases l0..l3 (the oldest
	// first) waits for the lease at rank size-limit, l1.
	four := map[string]float64{"l0": s - 3, "l1": s - 2, "l2": s - 1, "l3": s}
	acquire := append([]string(nil), argv...)
	acquire[0], acquire[2] = "acquire", "3"
	for _, c := range spoiled(four, "l1") {
		try("the lease a denied acquire waits for, "+c.what, c.v, acquire)
	}
	// A release of the newest lease, the one the call names, reads the
	// next newest, l2, for the key's new expiry.
	delete(four, "l3")
	four[lease] = s
	release := append([]string(nil), argv...)
	release[0] = "release"
	for _, c := range spoiled(four, "l2") {
		try("the next newest on a release of the newest, "+c.what, c.v, release)
	}
}

// corruptString spoils the string state st of script name, read at the
// server's clock server, every way the script checks it (each field every
// way a stored number can be wrong, fields missing and extra, tags of
// other scripts, foreign strings), and has try check each.
func corruptString(t *testing.T, name string, server int64, st string, good *value, try func(string, *value, ...[]string)) {
	t.Helper()
	layout := stateLayouts[name]
	if gcraShortRE.MatchString(st) {
		layout = stateLayouts["gcra short"]
	}
	if gcraSettledRE.MatchString(st) {
		layout = gcraSettled
	}
	if leakyBucketSettled.MatchString(st) {
		layout = leakySettled
	}
	m := layout.re.FindStringSubmatch(st)
	if m == nil {
		t.Fatalf("state %q does not match %v", st, layout.re)
	}
	fields := m[1:]
	str := func(what, s string) {
		t.Helper()
		try(fmt.Sprintf("%s: %q", what, s), &value{kind: "string", str: s, expireAt: good.expireAt})
	}
	// Every field, every way a stored number can be wrong, just
	// above its range and just below it; the fixed-width time
	// with the wrong width too.
	above, below := layout.above(fields, server), layout.below(fields)
	for i := range fields {
		bads := append(append([]string(nil), notIntegers...), above[i], strings.Repeat("9", 400))
		if below[i] != "" {
			bads = append(bads, below[i])
		}
		for _, bad := range bads {
			if name == "token_bucket" && i == 1 && bad == "-1" {
				continue // a debt of 1: a charge's state (below)
			}
			f := append([]string(nil), fields...)
			f[i] = bad
			str(fmt.Sprintf("field %d = %q", i+1, bad), joinState(layout.tag, f, layout.seps))
		}
	}
	str("without its last field", joinState(layout.tag, fields[:len(fields)-1], layout.seps))
	str("with a field more", joinState(layout.tag, append(append([]string(nil), fields...), "1"), append(layout.seps, "/")))
	for _, bad := range []string{"alice", "", "/", st + " ", " " + st, st + "\x00", "+" + st, "-" + st} {
		str("foreign", bad)
	}
	// Without its tag, or with another script's, and with the
	// tag doubled: the untagged states of earlier versions and
	// every other script's tag are refused.
	rest := st[len(layout.tag):]
	str("untagged", rest)
	str("tag doubled", layout.tag+st)
	for other, l := range stateLayouts {
		if l.tag != layout.tag {
			str("tagged "+other, l.tag+rest)
		}
	}
	if name == "token_bucket" {
		// A debt is 1 to 1e15 tokens, without a leading zero.
		ts := fields[0]
		for _, debt := range []string{"0", "01", "-1", "1000000000000001", "99999999999999999", "1.5", " 1"} {
			str("a debt of "+debt, "-"+ts+"-"+debt)
		}
	}
	if layout.tag == "g" {
		tat, interval, lead, err := parseGCRA(st, server)
		if err != nil {
			t.Fatal(err)
		}
		ts, iv := fmt.Sprintf("%016d", tat), strconv.FormatInt(interval, 10)
		// The write's clock, tat - lead, before 0; and the
		// layouts of earlier versions.
		str("a lead longer than the TAT", "g0000000000000005"+iv+"/"+strconv.FormatInt(max(lead-interval, 6), 10))
		str("the layout of two versions ago", fmt.Sprintf("%d/%d/%d", tat, interval, tat-lead))
		str("the last version's layout", fmt.Sprintf("%016d%d/%d", tat, interval, lead))
		str("a TAT of 15 digits", "g"+ts[1:]+iv+"/"+strconv.FormatInt(lead-interval, 10))
	}
}
