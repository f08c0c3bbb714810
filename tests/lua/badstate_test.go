package luatest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// notIntegers are stored values that are not integers as the scripts write
// them: Lua's tonumber would take most of them.
var notIntegers = []string{"", "abc", "nan", "-nan", "inf", "-inf", "1.5", "1e3", "0x10", " 5", "5 ", "+5",
	"007", "-0", "5\x00", "99999999999999999999", "-1"}

// outOfRange has, per script and field, the least value above what the
// script could have written.
var outOfRange = map[string]map[string]string{
	"token_bucket":           {"tokens": "1000000001", "ts": "4503599627370497"},
	"leaky_bucket":           {"level": "1000000000000001", "ts": "4503599627370497", "unit": "100000000000001"},
	"fixed_window":           {"n": "1000000001", "t": "4503599627370497"},
	"sliding_window_counter": {"s": "4503599627370497", "t": "4503599627370497", "cur": "1000000001", "prev": "2000000001"},
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
			r, keys, argv := firstWrite(t, name, src)
			// Each corruption meets the first write's call and the calls
			// that only look: a peek, or for concurrency, which has none,
			// every other op on the same lease.
			calls := [][]string{argv}
			if i := scenario.SpecOf(name).CostArg; i >= 0 {
				peek := append([]string(nil), argv...)
				peek[i] = "0"
				calls = append(calls, peek)
			} else {
				for _, op := range []string{"renew", "release"} {
					a := append([]string(nil), argv...)
					a[0] = op
					calls = append(calls, a)
				}
			}
			key := keys[0]
			good := r.get(key).clone()
			try := func(what string, v *value) {
				t.Helper()
				for _, a := range calls {
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
			case "hash":
				for field := range good.hash {
					for _, bad := range append(notIntegers, outOfRange[name][field]) {
						v := good.clone()
						v.hash[field] = bad
						try(fmt.Sprintf("%s=%q", field, bad), v)
					}
					v := good.clone()
					delete(v.hash, field)
					try("without "+field, v)
				}
				v := good.clone()
				v.hash["name"] = "alice"
				try("an extra field", v)
				if name == "sliding_window_counter" {
					// Fields that are integers in range but do not fit
					// together: the newest call before its window began, or
					// further after it than any window is long.
					s, _ := strconv.ParseInt(good.hash["s"], 10, 64)
					for _, tv := range []int64{s - 1, s + 1e14} {
						v := good.clone()
						v.hash["t"] = strconv.FormatInt(tv, 10)
						try(fmt.Sprintf("t=%d with s=%d", tv, s), v)
					}
				}
			case "string":
				tat, _, _ := parseGCRA(good.str)
				at := strings.Split(good.str, "/")[2]
				for _, bad := range []string{"alice", "1767225600000000", "1767225600000000/200000", "//",
					fmt.Sprintf("%d/0/%s", tat, at), fmt.Sprintf("%d/200000/%s/1", tat, at), fmt.Sprintf("%d.5/200000/%s", tat, at),
					"-1/200000/" + at, fmt.Sprintf("%d/-5/%s", tat, at), fmt.Sprintf(" %d/200000/%s", tat, at),
					fmt.Sprintf("%d/200000/%s ", tat, at), fmt.Sprintf("%d/200000/%d", tat, tat+1),
					fmt.Sprintf("%d/200000/%d", tat+1000000000000001, tat), "99999999999999999/200000/" + at} {
					try(fmt.Sprintf("%q", bad), &value{kind: "string", str: bad, expireAt: good.expireAt})
				}
			case "zset":
				if name == "concurrency" {
					leaseCorruptions(good, try)
					break
				}
				var newest string
				for m := range good.zset {
					newest = max(newest, m)
				}
				s := good.zset[newest]
				for _, m := range []string{"alice", "x-1", newest + "-1", newest + "x", "0" + newest,
					strings.Split(newest, "-")[0] + "-0", strings.Split(newest, "-")[0] + "-10001", strings.Split(newest, "-")[0] + "-01"} {
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
					v.zset[fmt.Sprintf("%d-%d", int64(s), 100+i)] = s
				}
				try("10001 members", v)
			}
		})
	}
}

// leaseCorruptions spoils a set of leases every way concurrency.lua checks:
// the oldest and newest members (a member that is no lease id, a score
// that is no whole µs or lies past the latest expiry a lease can have),
// the lease the call names, and a set over 10000 members.
func leaseCorruptions(good *value, try func(string, *value)) {
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
	for _, m := range []string{"", "a b", "x\x00", strings.Repeat("a", 65), "é"} {
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
}
