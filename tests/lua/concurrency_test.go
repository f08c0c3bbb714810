package luatest

import (
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redlimit/redlimit/tests/scenario"
)

func init() { models["concurrency"] = modelConcurrency }

var leaseRE = regexp.MustCompile(`^[0-9A-Za-z_-]{1,64}$`)

// earlierLogMember is what sliding_window_log.lua's members were before
// they took a ':': never a lease id.
var earlierLogMember = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// isLeaseID is the header's pattern, less the earlier log's members.
func isLeaseID(s string) bool { return leaseRE.MatchString(s) && !earlierLogMember.MatchString(s) }

const badLease = "BADARG lease must be 1 to 64 of A-Z, a-z, 0-9, '_' and '-', and not <digits>-<digits>"

// modelConcurrency restates concurrency.lua from its header.
func modelConcurrency(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	op, _ := a.str(0)
	lease, hasLease := a.str(1)
	limit := a.int(2, "limit", 1, 10000)
	ttlMs := a.int(3, "ttl", 1, 86400000)
	now := a.int(4, "now", 0, maxTime)
	deadline := a.int(5, "deadline", 0, maxTime)
	if op != "acquire" && op != "renew" && op != "release" {
		a.fail("BADARG op must be 'acquire', 'renew' or 'release'")
	}
	if !hasLease || !isLeaseID(lease) {
		a.fail(badLease)
	}
	if err := a.finish(keys, "leases", 6); err != nil {
		return nil, err
	}
	now, caller, err := clock(r, now, deadline)
	if err != nil {
		return nil, err
	}
	badState := ErrorReply("BADSTATE the key is not a set of leases scored by their expiry; it is left untouched")
	key := keys[0]
	v := r.get(key)
	if v != nil && v.kind != "zset" {
		return nil, ErrorReply(wrongType)
	}
	type member struct {
		m string
		s float64
	}
	var set []member
	if v != nil {
		for m, s := range v.zset {
			set = append(set, member{m, s})
		}
	}
	sort.Slice(set, func(i, j int) bool {
		if set[i].s != set[j].s {
			return set[i].s < set[j].s
		}
		return set[i].m < set[j].m
	})
	latest := float64(r.now + maxSkew + 86400e6)
	expiry := func(m member) (int64, bool) {
		ok := isLeaseID(m.m) && m.s >= 0 && m.s <= latest && m.s == math.Floor(m.s)
		return int64(m.s), ok
	}
	size := int64(len(set))
	if size > 10000 {
		return nil, badState
	}
	var last int64
	if size > 0 {
		var ok1, ok2 bool
		last, ok1 = expiry(set[size-1])
		_, ok2 = expiry(set[0])
		if !ok1 || !ok2 {
			return nil, badState
		}
	}
	var mine int64
	held := false
	if v != nil {
		if s, ok := v.zset[lease]; ok {
			e, ok := expiry(member{lease, s})
			if !ok {
				return nil, badState
			}
			mine, held = e, e > now
		}
	}
	var live int64
	for _, m := range set {
		if int64(m.s) > now {
			live++
		}
	}
	answer := func(allowed, n, retry int64) []int64 {
		var reset int64
		if n > 0 {
			reset = ms(last - now)
		}
		return []int64{allowed, max(0, limit-n), retry, reset}
	}
	switch {
	case op == "acquire" && !held && live >= limit:
		e, ok := expiry(set[size-limit])
		if !ok {
			return nil, badState
		}
		return answer(0, live, ms(e-now)), nil
	case op != "acquire" && !held:
		return answer(0, live, 0), nil
	}
	if op == "release" && mine == last && live > 1 {
		if set[size-1].m == lease {
			var ok bool
			if last, ok = expiry(set[size-2]); !ok {
				return nil, badState
			}
		}
	}
	// Every expired member is checked before any is removed.
	for _, m := range set {
		if _, ok := expiry(m); !ok && int64(m.s) <= now {
			return nil, badState
		}
	}
	for m, s := range v.zsetOrNil() {
		if int64(s) <= now {
			delete(v.zset, m)
		}
	}
	if op == "release" {
		delete(v.zset, lease)
		live--
	} else {
		until := now + ttlMs*1000
		if held && mine > until {
			until = mine
		}
		if v == nil {
			v = &value{kind: "zset", zset: map[string]float64{}}
			r.data[key] = v
		}
		v.zset[lease] = float64(until)
		if !held {
			live++
		}
		last = max(last, until)
	}
	if len(v.zset) == 0 {
		delete(r.data, key)
	} else if live > 0 {
		v.expireAt = r.now + 1000*max(1, ms(ttl(r, last, caller)))
	}
	return answer(1, live, 0), nil
}

func (v *value) zsetOrNil() map[string]float64 {
	if v == nil {
		return nil
	}
	return v.zset
}

// concurrencyRun sends random acquires, renews and releases of a few
// leases on one key, at random limits and ttls now and then, with the
// server's clock and callers' clocks.
func concurrencyRun(w *twin, rng *rand.Rand, calls int, limit, ttl int64, callerClocks bool) {
	server := w.lua.Now()
	for c := 0; c < calls; c++ {
		server = min(server+rng.Int63n(ttl*1000/2+1), maxTime-maxSkew)
		w.setTime(server)
		now := "0"
		if callerClocks && rng.Intn(2) == 0 {
			now = strconv.FormatInt(server+rng.Int63n(2*maxSkew+1)-maxSkew, 10)
		}
		l, tl := limit, ttl
		if rng.Intn(15) == 0 {
			l = 1 + rng.Int63n(2*limit)
		}
		if rng.Intn(15) == 0 {
			tl = 1 + rng.Int63n(2*ttl)
		}
		op := []string{"acquire", "acquire", "renew", "release"}[rng.Intn(4)]
		lease := fmt.Sprintf("l%d", rng.Intn(int(2*limit+2)))
		w.call([]string{"k"}, []string{op, lease, strconv.FormatInt(l, 10), strconv.FormatInt(tl, 10), now})
		if cmds := len(w.lua.Commands()); cmds > 10 {
			w.t.Fatalf("%d commands in one call: %v", cmds, w.lua.Commands())
		}
	}
}

// TestConcurrencyMatchesModel: the script against its model, reply for
// reply and state for state (TTLs included), over random calls.
func TestConcurrencyMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		limit := []int64{1, 2, 3, 5, 10}[rng.Intn(5)]
		ttl := []int64{1, 7, 1000, 60000, 86400000}[rng.Intn(5)]
		base := []int64{scenario.T0, maxTime - maxSkew - 86400e6}[rng.Intn(2)]
		concurrencyRun(newTwin(t, "concurrency", base), rng, 150, limit, ttl, seed%2 == 0)
	}
}

// TestConcurrencyNeverOverLimit holds the script to what its holders see,
// on the server's clock: a holder holds its lease from an acquire that
// answered allowed until it releases it or its expiry passes, and a renew
// that answered allowed moves that expiry on. At no call do more than
// limit holders hold a lease; an acquire is denied only when limit
// holders hold one, and its retry_after is exactly when the first of the
// leases that must expire does; a release answers allowed exactly when
// its holder held the lease, so a second release answers 0.
func TestConcurrencyNeverOverLimit(t *testing.T) {
	src, err := Source("concurrency")
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		limit := int64(1 + rng.Intn(5))
		ttl := int64(1 + rng.Intn(2000))
		r := New(scenario.T0)
		holders := map[string]int64{} // lease -> expiry, µs
		for c := 0; c < 400; c++ {
			r.SetTime(r.Now() + rng.Int63n(ttl*1000/3+1))
			now := r.Now()
			for l, e := range holders {
				if e <= now {
					delete(holders, l)
				}
			}
			op := []string{"acquire", "acquire", "renew", "release"}[rng.Intn(4)]
			lease := fmt.Sprintf("h%d", rng.Intn(int(3*limit)))
			got, err := r.Eval(src, []string{"k"}, []string{op, lease, strconv.FormatInt(limit, 10), strconv.FormatInt(ttl, 10), "0", "0"})
			if err != nil {
				t.Fatal(err)
			}
			reply := ints64(got)
			_, held := holders[lease]
			switch {
			case op == "acquire" && reply[0] == 1:
				holders[lease] = max(holders[lease], now+ttl*1000)
			case op == "acquire":
				if held || int64(len(holders)) < limit {
					t.Fatalf("seed %d: acquire %s denied while %d of %d are held (held itself: %v)", seed, lease, len(holders), limit, held)
				}
				var exp []int64
				for _, e := range holders {
					exp = append(exp, e)
				}
				sort.Slice(exp, func(i, j int) bool { return exp[i] < exp[j] })
				if want := ms(exp[int64(len(exp))-limit] - now); reply[2] != want {
					t.Fatalf("seed %d: acquire denied with retry_after %d ms, want %d", seed, reply[2], want)
				}
			case op == "renew":
				if (reply[0] == 1) != held {
					t.Fatalf("seed %d: renew %s answered %v, held %v", seed, lease, reply, held)
				}
				if held {
					holders[lease] = max(holders[lease], now+ttl*1000)
				}
			case op == "release":
				if (reply[0] == 1) != held {
					t.Fatalf("seed %d: release %s answered %v, held %v", seed, lease, reply, held)
				}
				delete(holders, lease)
			}
			if n := int64(len(holders)); n > limit || reply[1] != max(0, limit-n) {
				t.Fatalf("seed %d: %d holders of %d, reply %v", seed, n, limit, reply)
			}
		}
	}
}

// TestConcurrencyReapsAtTheCap: a set at the 10000 cap whose leases all
// expired is emptied by the next acquire, in one command, and a set past
// the cap is refused. Calls send a fixed number of commands however large
// the set is.
func TestConcurrencyReapsAtTheCap(t *testing.T) {
	src, err := Source("concurrency")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	v := &value{kind: "zset", zset: map[string]float64{}, expireAt: scenario.T0 + 1e6}
	for i := 0; i < 10000; i++ {
		v.zset[fmt.Sprintf("crashed-%d", i)] = float64(scenario.T0 - 1 - int64(i))
	}
	r.data["k"] = v
	got, err := r.Eval(src, []string{"k"}, []string{"acquire", "new", "10000", "1000", "0", "0"})
	if err != nil || ints64(got)[0] != 1 {
		t.Fatalf("got (%v, %v)", got, err)
	}
	if n := len(r.get("k").zset); n != 1 {
		t.Errorf("%d members after the reap, want 1", n)
	}
	reaps := 0
	for _, c := range r.Commands() {
		if strings.HasPrefix(c, "ZREMRANGEBYSCORE") {
			reaps++
		}
	}
	if reaps != 1 || len(r.Commands()) > 10 {
		t.Errorf("commands: %v", r.Commands())
	}
	v = r.get("k").clone()
	for i := 0; len(v.zset) <= 10000; i++ {
		v.zset[fmt.Sprintf("x%d", i)] = float64(scenario.T0 + 5e5)
	}
	r.data["k"] = v
	expectBadArg(t, r, src, []string{"k"}, []string{"acquire", "other", "10000", "1000", "0", "0"}, "BADSTATE ")
}

// TestLeaseIDs: the lease id is 1 to 64 of A-Z, a-z, 0-9, '_' and '-', for
// every op; anything else is BADARG and changes nothing.
func TestLeaseIDs(t *testing.T) {
	src, err := Source("concurrency")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	good := strings.Repeat("aZ09_-", 10) + "abcd"
	for _, op := range []string{"acquire", "renew", "release"} {
		got, err := r.Eval(src, []string{"k"}, []string{op, good, "5", "1000", "0", "0"})
		if err != nil || len(got.([]any)) != 4 {
			t.Fatalf("%s %q: (%v, %v)", op, good, got, err)
		}
		for _, bad := range []string{"", " ", "a b", "a\tb", "a\x00", "a.b", "a:b", "a{b}", "é", "ü", good + "x", "'", "\"a\"", "1767225600000000-1", "0-0"} {
			expectBadArg(t, r, src, []string{"k"}, []string{op, bad, "5", "1000", "0", "0"}, badLease)
		}
	}
}
