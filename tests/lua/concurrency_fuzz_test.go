package luatest

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

// FuzzConcurrency: any state and any ARGV get either an error reply that
// changes nothing, or a reply that keeps concurrency.lua's promises. Each
// call is checked against the model (reply, state, TTL), and besides:
//   - an error and any call that answers allowed 0 send no write;
//   - remaining, retry_after and reset_after are never negative, and only
//     a denied acquire waits;
//   - a denied acquire's retry_after is exact: at the caller's clock plus
//     it, the same acquire passes if nothing else happens, and 1 ms
//     earlier it is denied while the key lives;
//   - no key lives past the longest ttl a lease may have plus twice the
//     60 s bound, nor, on a key that started empty, past the longest ttl
//     sent plus that;
//   - then, on the server's clock at one limit and ttl, no more than limit
//     holders ever hold a lease, and an acquire is denied only when limit
//     do (TestConcurrencyNeverOverLimit's rules).
//
// state is the key before the first call, as FuzzGCRA takes it. calls is
// one call a line: the µs the server's clock moves first (a trailing '*'
// sends no key, '**' two), then ARGV split by tabs; a clock or a deadline
// (the last two) written "~n" is the server's clock plus n. seed draws 60
// more calls.
func FuzzConcurrency(f *testing.F) {
	t0 := strconv.FormatInt(scenario.T0, 10)
	line := func(adv string, argv ...string) string { return adv + "\t" + strings.Join(argv, "\t") }
	calls := func(lines ...string) string { return strings.Join(lines, "\n") }
	for i, s := range []struct{ state, calls string }{
		{"", line("0", "acquire", "a", "2", "1000", "0", "0")},
		{"", calls(line("0", "acquire", "a", "1", "1000", "0", "0"), line("0", "acquire", "b", "1", "1000", "0", "0"), line("500000", "release", "a", "1", "1000", "0", "0"),
			line("0", "release", "a", "1", "1000", "0", "0"), line("0", "acquire", "b", "1", "1000", "0", "0"), line("2000000", "renew", "b", "1", "1000", "0", "0"))},
		{"", calls(line("0", "acquire", "a", "1", "5000", "~10000000", "0"), line("0", "acquire", "b", "1", "5000", "~-10000000", "0"), line("0", "renew", "a", "1", "5000", "~-60000000", "0"))},
		{"zset\t" + t0 + "\ta\t1\tb", line("0", "acquire", "c", "2", "1000", "0", "0")},
		{"zset\t1e300\ta", line("0", "release", "a", "2", "1000", "0", "0")},
		{"string\tx", line("0", "acquire", "a", "2", "1000", "0", "0")},
		{"", calls(line("0", "take", "a", "2", "1000", "0", "0"), line("0", "acquire", "a b", "2", "1000", "0", "0"), line("0", "acquire", "a", "0", "1000", "0", "0"),
			line("0", "acquire", "a", "2", "86400001", "0", "0"), line("0*", "acquire", "a", "2", "1000", "0", "0"), line("0**", "acquire", "a", "2", "1000", "0", "0"),
			line("0", "acquire", "a", "2", "1000", "~60000001", "0"), line("0", "acquire", "a", "2", "1000", "0", "0", "x"))},
		// Issue 15.4: deadlines passed, reached and not yet reached.
		{"", calls(line("0", "acquire", "a", "2", "1000", "0", "~-1"), line("0", "acquire", "a", "2", "1000", "0", "~0"),
			line("0", "acquire", "a", "2", "1000", "0", "~1"), line("0", "renew", "a", "2", "1000", "0", "~-1"), line("0", "release", "a", "2", "1000", "0", "~-1"))},
		// Issue 15.1: a sliding window log's members, and an expired foreign
		// member between leases.
		{"zset\t" + t0 + "\t" + scenario.LogMember(scenario.T0, 1), line("0", "acquire", "a", "2", "1000", "0", "0")},
		{"zset\t1\ta\t2\t2:1\t" + t0 + "5\tb", line("0", "acquire", "c", "3", "1000", "0", "0")},
		{"", calls(line("0", "acquire", "a", "3", "86400000", "~60000000", "0"), line("0", "acquire", "b", "1", "1", "0", "0"), line("1000", "release", "a", "3", "1", "0", "0"))},
	} {
		f.Add(s.state, s.calls, int64(i))
	}
	f.Fuzz(func(t *testing.T, state, calls string, seed int64) {
		fz := &leaseFuzz{t: t, w: newTwin(t, "concurrency", scenario.T0)}
		if v := fuzzValue(state); v != nil {
			fz.w.lua.data["k"] = v.clone()
			fz.w.gold.data["k"] = v.clone()
		} else {
			fz.fresh = true
		}
		lines := strings.Split(calls, "\n")
		for _, ln := range lines[:min(len(lines), 60)] {
			keys, adv, argv, ok := fuzzLine(ln)
			if !ok {
				continue
			}
			fz.advance(adv)
			for i := max(0, len(argv)-2); i < len(argv); i++ {
				argv[i] = fuzzClock(argv[i], fz.w.lua.Now()) // the clock, the deadline
			}
			fz.call(keys, argv)
		}
		fz.random(rand.New(rand.NewSource(seed)), 60)
	})
}

type leaseFuzz struct {
	t       *testing.T
	w       *twin
	fresh   bool  // the key started empty
	longest int64 // the longest ttl accepted, ms
}

func (fz *leaseFuzz) advance(d int64) {
	fz.w.setTime(min(maxTime-maxSkew-86400e6, fz.w.lua.Now()+max(0, min(d, 1e13))))
}

func (fz *leaseFuzz) call(keys, argv []string) []int64 {
	t := fz.t
	t.Helper()
	before := fz.w.lua.Snapshot()
	got, err := fz.w.call(keys, argv)
	var reply []int64
	if err == nil {
		reply = ints64(got)
	}
	if err != nil || reply[0] == 0 {
		if after := fz.w.lua.Snapshot(); !before.Equal(after) {
			t.Fatalf("%v: an error or a call that answered 0 changed the key:\n%s->\n%s", argv, before, after)
		}
		for _, c := range fz.w.lua.Commands() {
			if writes[strings.ToUpper(strings.Fields(c)[0])] {
				t.Fatalf("%v: an error or a call that answered 0 sent %q", argv, c)
			}
		}
	}
	if err != nil {
		return nil
	}
	if len(reply) != 4 || reply[0] < 0 || reply[0] > 1 || reply[1] < 0 || reply[2] < 0 || reply[3] < 0 ||
		reply[2] > 0 && (argv[0] != "acquire" || reply[0] == 1) {
		t.Fatalf("%v: reply %v", argv, reply)
	}
	ttlMs, _ := strconv.ParseInt(argv[3], 10, 64)
	fz.longest = max(fz.longest, ttlMs)
	if p := fz.w.lua.PTTL("k"); p > 0 {
		most := int64(86400000)
		if fz.fresh {
			most = fz.longest
		}
		if p > most+2*maxSkew/1000+1 {
			t.Fatalf("%v: PTTL %d ms, past the longest ttl %d ms plus twice the bound", argv, p, most)
		}
	}
	if reply[2] > 0 {
		fz.probe(keys, argv, reply[2])
	}
	return reply
}

// probe checks a denied acquire's wait on copies.
func (fz *leaseFuzz) probe(keys, argv []string, wait int64) {
	t := fz.t
	t.Helper()
	for _, after := range []int64{wait - 1, wait} {
		c := fz.w.lua.Clone()
		c.SetTime(min(maxTime, c.Now()+after*1000))
		a := append([]string(nil), argv...)
		a[5] = "0" // the retry has a deadline of its own
		if now, _ := strconv.ParseInt(a[4], 10, 64); now != 0 {
			a[4] = strconv.FormatInt(min(maxTime, now+after*1000), 10)
		}
		lives := c.get("k") != nil
		got, err := c.Eval(fz.w.src, keys, a)
		if err != nil {
			t.Fatalf("%v: waits %d ms, then %v", argv, wait, err)
		}
		ok := ints64(got)[0] == 1
		if after == wait && !ok || after < wait && ok && lives {
			t.Fatalf("%v: waits %d ms; %d ms later allowed=%v: %v", argv, wait, after, ok, got)
		}
	}
}

// random sends n calls on the server's clock at one limit and ttl, and
// holds them to what holders see (see TestConcurrencyNeverOverLimit).
// Leases the input left live count as held by holders nobody controls.
func (fz *leaseFuzz) random(rng *rand.Rand, n int) {
	limit := int64(1 + rng.Intn(4))
	ttl := int64(1 + rng.Intn(1000))
	holders := map[string]int64{}
	if v := fz.w.lua.get("k"); v != nil && v.kind == "zset" {
		for m, s := range v.zset {
			holders[m] = int64(s)
		}
	}
	for i := 0; i < n; i++ {
		fz.advance(rng.Int63n(ttl*1000/2 + 1))
		now := fz.w.lua.Now()
		for l, e := range holders {
			if e <= now {
				delete(holders, l)
			}
		}
		op := []string{"acquire", "acquire", "renew", "release"}[rng.Intn(4)]
		lease := "r" + strconv.Itoa(rng.Intn(int(2*limit+1)))
		reply := fz.call([]string{"k"}, []string{op, lease, strconv.FormatInt(limit, 10), strconv.FormatInt(ttl, 10), "0", "0"})
		if reply == nil {
			return // foreign or corrupt state: nothing to hold it to
		}
		_, held := holders[lease]
		switch {
		case op == "acquire" && reply[0] == 1, op == "renew" && reply[0] == 1:
			holders[lease] = max(holders[lease], now+ttl*1000)
		case op == "acquire":
			if held || int64(len(holders)) < limit {
				fz.t.Fatalf("acquire %s denied while %d of %d are held", lease, len(holders), limit)
			}
		case op == "release":
			if (reply[0] == 1) != held {
				fz.t.Fatalf("release %s answered %v, held %v", lease, reply, held)
			}
			delete(holders, lease)
		}
		if op == "acquire" && reply[0] == 1 && !held && int64(len(holders)) > limit {
			fz.t.Fatalf("%d holders of %d after %s %s", len(holders), limit, op, lease)
		}
	}
}
