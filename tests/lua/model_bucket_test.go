package luatest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redlimit/redlimit/tests/scenario"
)

func init() {
	models["token_bucket"] = modelTokenBucket
	models["leaky_bucket"] = modelLeakyBucket
	models["gcra"] = modelGCRA
}

// The scripts' string states, as patterns: the script's tag, a time as a
// fixed number of digits, then numbers without leading zeros.
var (
	tokenBucketState = regexp.MustCompile(`^-([0-9]{16})(0|[1-9][0-9]*|-[1-9][0-9]*)$`)
	leakyBucketState = regexp.MustCompile(`^l([0-9]{16})([1-9][0-9]*)/(0|[1-9][0-9]*)$`)
	// leaky_bucket.lua's settled form, which only a refund or a charge writes.
	leakyBucketSettled = regexp.MustCompile(`^l([0-9]{16})([1-9][0-9]*)=(0|[1-9][0-9]*)\+(0|[1-9][0-9]*)$`)
)

func modelTokenBucket(r *Redis, keys, argv []string) ([]int64, error) {
	b, err := readBatch(keys, argv, [3]string{"capacity", "rate", "period"}, "refill",
		"BADARG refill must be 'smooth', 'interval', 'smooth_refund', 'smooth_charge', 'interval_refund' or 'interval_charge' (ARGV: capacity, rate, period, now, refill, then cost and deadline per request)",
		"smooth", "interval", "smooth_refund", "smooth_charge", "interval_refund", "interval_charge")
	if err != nil {
		return nil, err
	}
	capacity, rate, period := b.lim[0], b.lim[1], b.lim[2]
	smooth := strings.HasPrefix(b.word, "smooth")
	// settle is -1 for a refund, 1 for a charge, 0 for a take.
	var settle int64
	switch {
	case strings.HasSuffix(b.word, "_refund"):
		settle = -1
	case strings.HasSuffix(b.word, "_charge"):
		settle = 1
	}
	p := period * 1000
	// at is the instant a bucket holding have tokens, credited up to mark,
	// holds n: whole tokens are credited rate per p µs (smooth), or rate at
	// once per whole p (interval).
	at := func(have, mark, n int64) int64 {
		if smooth {
			return mark + mulDivCeil(n-have, p, rate)
		}
		return mark + mulSat(ceilDiv(n-have, rate), p)
	}
	if at(0, 0, capacity) > 1e15 {
		return nil, ErrorReply("BADARG capacity/rate*period must be at most 1e15 µs (31 years)")
	}
	if len(keys) > 1 {
		return eachKey(r, keys, argv, modelTokenBucket)
	}
	// The most debt: the tokens credited in 1e15 µs, at most 1e15.
	maxDebt, _, fits := mulDiv(1e15, rate, p)
	if !fits || maxDebt > 1e15 {
		maxDebt = 1e15
	}
	return b.each(r, func(cost, now int64, caller bool) ([]int64, error) {
		// '-<ts><tokens>': ts as 16 digits, tokens without a leading zero.
		bad := badState("a token bucket -<ts><tokens> or -<ts>-<debt>")
		st, err := stringState(r, keys[0], tokenBucketState, bad)
		if err == nil && st != nil && (st[0] > latest(r) || st[1] > 1e9 || st[1] < -1e15) {
			err = ErrorReply(bad)
		}
		if err != nil {
			return nil, err
		}
		// A key that holds nothing is a full bucket at the later of the
		// caller's clock and the server's.
		tokens, ts := capacity, max(now, r.now)
		if st != nil {
			// A debt counts at most the current limit's most.
			ts, tokens = st[0], max(st[1], -maxDebt)
		}
		own := now
		now = max(now, ts)
		have := min(tokens, capacity)
		held, mark := capacity, now
		if have < capacity && now < at(have, ts, capacity) {
			if smooth {
				added, _, _ := mulDiv(now-ts, rate, p)
				held, mark = have+added, ts+mulDivCeil(added, p, rate)
			} else {
				steps := (now - ts) / p
				held, mark = have+steps*rate, ts+steps*p
			}
		}
		var reset int64
		if have < capacity && at(have, ts, capacity) > now {
			reset = at(have, ts, capacity) - own
		}
		if settle != 0 {
			// Never denied: count is the tokens moved, a refund up to
			// capacity, a charge down to the most debt.
			var count int64
			if settle < 0 && held < capacity {
				count = min(cost, capacity-held)
			} else if settle > 0 && held+maxDebt > 0 {
				count = min(cost, held+maxDebt)
			}
			if count > 0 {
				held -= settle * count
				ts, tokens = mark, held
				writeString(r, keys[0], ttl(r, at(held, mark, capacity), caller), fmt.Sprintf("-%016d%d", mark, held))
			}
			have = min(tokens, capacity)
			var retry int64
			reset = 0
			if have < capacity && at(have, ts, capacity) > now {
				reset = at(have, ts, capacity) - own
			}
			if have < 1 && at(have, ts, 1) > now {
				retry = ms(at(have, ts, 1) - own)
			}
			return []int64{count, max(0, held), retry, ms(reset)}, nil
		}
		want := max(cost, 1)
		switch {
		case want > capacity:
			return []int64{0, max(0, held), -1, ms(reset)}, nil
		case have < want && at(have, ts, want) > now:
			return []int64{0, max(0, held), ms(at(have, ts, want) - own), ms(reset)}, nil
		case cost == 0:
			return []int64{1, held, 0, ms(reset)}, nil
		}
		held -= cost
		full := at(held, mark, capacity)
		writeString(r, keys[0], ttl(r, full, caller), fmt.Sprintf("-%016d%d", mark, held))
		return []int64{1, held, 0, ms(full - own)}, nil
	})
}

func modelLeakyBucket(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	capacity := a.int(0, "capacity", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(3, "cost", 0, 1e9)
	now := a.int(4, "now", 0, maxTime)
	deadline := a.int(5, "deadline", 0, maxTime)
	// settle is -1 for a refund, 1 for a charge, 0 for a pour (no 7th
	// argument).
	var settle int64
	nargs := 6
	if word, ok := a.str(6); ok {
		switch word {
		case "refund":
			settle, nargs = -1, 7
		case "charge":
			settle, nargs = 1, 7
		default:
			a.fail("BADARG settle must be 'refund' or 'charge' (or absent, for a pour)")
		}
	}
	if err := a.finish(keys, "bucket", nargs); err != nil {
		return nil, err
	}
	if rate > period*1000 {
		return nil, ErrorReply("BADARG rate must be at most one per µs (period*1000)")
	}
	unit := ceilDiv(period*1000, rate)
	full := mulSat(capacity, unit)
	if full > 1e15 {
		return nil, ErrorReply("BADARG capacity*period/rate must be at most 1e15 µs (31 years)")
	}
	now, caller, err := clock(r, now, deadline)
	if err != nil {
		return nil, err
	}
	// 'l<ts><unit>/<more>': ts as 16 digits, then two numbers without
	// leading zeros; the level is unit + more. Or the settled form
	// 'l<ts><unit>=<water>+<debt>', the debt being the part of the water
	// past the writing limit's full bucket.
	what := badState("a leaky bucket l<ts><unit>/<more> or l<ts><unit>=<water>+<debt>")
	var st []int64 // ts, unit, level, debt
	if v := r.get(keys[0]); v != nil {
		if v.kind != "string" {
			return nil, ErrorReply(wrongType)
		}
		if m, err := stringState(r, keys[0], leakyBucketState, what); err == nil {
			st = []int64{m[0], m[1], m[1] + m[2], 0}
		} else if m, err := stringState(r, keys[0], leakyBucketSettled, what); err == nil {
			st = m
		} else {
			return nil, err
		}
		if st[0] > latest(r) || st[1] > 1e14 || st[3] > st[2] || st[3] > 1e15 || st[2]-st[3] > 1e15 {
			return nil, ErrorReply(what)
		}
	}
	own := now
	var water int64
	if st == nil {
		now = max(now, r.now)
	} else {
		ts, was, level, debt := st[0], st[1], st[2], st[3]
		now = max(now, ts)
		// The level at the last pour in units of the current rate: whole
		// ones exactly, a part one rounded up, then no more than a full
		// bucket; a debt in units of the current rate too, rounded up, to
		// at most 1e15 µs. It drains at the current rate since.
		keep := level - debt
		if units := keep / was; units >= capacity {
			keep = full
		} else {
			keep = min(full, units*unit+mulDivCeil(keep-units*was, unit, was))
		}
		water = max(0, keep+min(1e15, mulDivCeil(debt, unit, was))-(now-ts))
	}
	// A settle moves what it can, then answers as a peek.
	var moved int64
	switch {
	case settle < 0 && st != nil && water > 0:
		moved = min(cost, ceilDiv(water, unit))
		water = max(0, water-moved*unit)
	case settle > 0:
		moved = min(cost, max(0, full+1e15-water)/unit)
		water += moved * unit
	}
	if settle != 0 {
		cost = 0
	}
	var remaining int64
	if water < full {
		remaining = (full - water) / unit
	}
	var reset int64
	if water > 0 {
		reset = ms(now + water - own)
	}
	if moved > 0 {
		state := fmt.Sprintf("l%016d%d/%d", now, unit, water-unit)
		if water < unit || water > full {
			state = fmt.Sprintf("l%016d%d=%d+%d", now, unit, water, max(0, water-full))
		}
		writeString(r, keys[0], ttl(r, now+water, caller), state)
	}
	if settle != 0 {
		var wait int64
		if water+unit > full {
			wait = ms(now + water + unit - full - own)
		}
		return []int64{min(moved, 1), remaining, wait, reset}, nil
	}
	want := max(cost, 1)
	switch {
	case want > capacity:
		return []int64{0, remaining, -1, reset}, nil
	case water+want*unit > full:
		return []int64{0, remaining, ms(now + water + want*unit - full - own), reset}, nil
	case cost == 0:
		return []int64{1, remaining, 0, reset}, nil
	}
	water += cost * unit
	writeString(r, keys[0], ttl(r, now+water, caller), fmt.Sprintf("l%016d%d/%d", now, unit, water-unit))
	return []int64{1, remaining - cost, 0, ms(now + water - own)}, nil
}

// eachKey is a call of a batch script on many keys restated: request i
// as its own call on key i, at the same instant, in turn; the first call's
// error is the call's, and then nothing is written at any key.
func eachKey(r *Redis, keys, argv []string, model func(r *Redis, keys, argv []string) ([]int64, error)) ([]int64, error) {
	c := r.Clone()
	out := make([]int64, 0, 4*len(keys))
	for i := range keys {
		one := append(append([]string(nil), argv[:5]...), argv[5+2*i:7+2*i]...)
		got, err := model(c, keys[i:i+1], one)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	r.data = c.data
	return out, nil
}

// modelGCRA is gcra.lua restated: each request as its own call would be
// judged, the state it leaves written before the next (take at_most takes
// what is left, up to the cost, instead of a cost that passes whole or not
// at all).
func modelGCRA(r *Redis, keys, argv []string) ([]int64, error) {
	b, err := readBatch(keys, argv, [3]string{"burst", "rate", "period"}, "take",
		"BADARG take must be 'all', 'at_most', 'refund' or 'charge' (ARGV: burst, rate, period, now, take, then cost and deadline per request)", "all", "at_most", "refund", "charge")
	if err == nil && b.lim[1] > b.lim[2]*1000 {
		err = ErrorReply("BADARG rate must be at most one per µs (period*1000)")
	}
	if err != nil {
		return nil, err
	}
	burst, rate, period := b.lim[0], b.lim[1], b.lim[2]
	atMost := b.word == "at_most"
	interval := ceilDiv(period*1000, rate)
	tolerance := mulSat(burst, interval)
	if tolerance > 1e15 {
		return nil, ErrorReply("BADARG burst*period/rate must be at most 1e15 µs (31 years)")
	}
	if len(keys) > 1 {
		return eachKey(r, keys, argv, modelGCRA)
	}
	return b.each(r, func(cost, now int64, caller bool) ([]int64, error) {
		own := now
		v := r.get(keys[0])
		if v == nil {
			now = max(now, r.now)
		}
		theo := now
		var wrote int64 // the last write's clock, when the key holds a state
		if v != nil {
			if v.kind != "string" {
				return nil, ErrorReply(wrongType)
			}
			// 'g<tat><interval>/<more>' (the TAT as 16 digits, the interval
			// it counts in, and its lead on the clock of the write that set
			// it, less one interval) or '2<tat mod 1e10><interval>' (a lead
			// of one interval).
			tat, was, lead, debt, err := scenario.ParseGCRADebt(v.str, r.now)
			at := tat - lead
			wrote = at
			if err != nil || was > 1e14 || debt > lead || debt > 1e15+2*maxSkew || lead-debt > 1e15 || at < 0 || at > latest(r) {
				return nil, ErrorReply(badState("a GCRA state 2<tat><interval>, g<tat><interval>/<more> or g<tat><interval>=<lead>+<debt>"))
			}
			// The lead on the last write's clock in intervals of the current
			// rate: whole ones exactly, a part one rounded up, then no more
			// than a full burst; a charge's debt past it likewise, to at most
			// 1e15 µs, and never capped by the burst.
			keep := lead - debt
			if units := keep / was; units >= burst {
				keep = tolerance
			} else {
				keep = min(tolerance, units*interval+mulDivCeil(keep-units*was, interval, was))
			}
			// The script carries a state over only when the limit changed
			// or the lead passes a full burst; otherwise the debt stands as
			// written (a charge with a lagging clock may write up to 120 s
			// past 1e15 µs), capped at 1e15 µs only when carried over.
			owed := mulDivCeil(debt, interval, was)
			if was != interval || lead-debt > tolerance {
				owed = min(1e15, owed)
			}
			theo = max(now, at+keep+owed)
		}
		ahead := theo - now
		left := func(d int64) int64 { return max(0, burst-ceilDiv(d, interval)) }
		wait := func(d int64) int64 { return ms(d + now - own) }
		var reset int64
		if ahead > 0 {
			reset = wait(ahead)
		}
		if b.word == "refund" || b.word == "charge" {
			// Never denied: count is the units moved. A refund gives back
			// what is ahead, up to cost intervals, on a key with state; a
			// charge counts cost, up to a debt of 1e15 µs past a full burst.
			var count int64
			if b.word == "refund" {
				if v != nil && ahead > 0 {
					count = min(cost, ceilDiv(ahead, interval))
					ahead = max(0, ahead-count*interval)
				}
			} else if room := tolerance + 1e15 - ahead; room > 0 {
				count = min(cost, room/interval)
				ahead += count * interval
			}
			if count > 0 {
				theo = now + ahead
				// Dated at the later of its clock and the write before it,
				// no later than the TAT: a lead seen only because an
				// earlier caller's clock ran ahead is not debt.
				lead := ahead
				if v != nil && wrote > now {
					lead = theo - min(wrote, theo)
				}
				state := scenario.GCRAState(theo, interval, lead)
				if lead < interval || lead > tolerance {
					state = scenario.GCRASettledState(theo, interval, lead, max(0, lead-tolerance))
				}
				r.data[keys[0]] = &value{kind: "string", str: state, expireAt: r.now + 1000*max(1, ms(ttl(r, theo, caller)))}
			}
			var retry int64
			if ahead+interval > tolerance {
				retry = wait(ahead + interval - tolerance)
			}
			reset = 0
			if ahead > 0 {
				reset = wait(ahead)
			}
			return []int64{count, left(ahead), retry, reset}, nil
		}
		taken := int64(1)
		if atMost {
			// What is left, up to the cost; nothing left waits for one, and
			// a peek takes nothing.
			if left(ahead) == 0 {
				return []int64{0, 0, wait(ahead + interval - tolerance), reset}, nil
			}
			cost = min(cost, left(ahead))
			taken = cost
		}
		want := max(cost, 1)
		switch {
		case want > burst:
			return []int64{0, left(ahead), -1, reset}, nil
		case ahead+want*interval > tolerance:
			return []int64{0, left(ahead), wait(ahead + want*interval - tolerance), reset}, nil
		case cost == 0:
			return []int64{taken, left(ahead), 0, reset}, nil
		}
		theo += cost * interval
		ahead += cost * interval
		r.data[keys[0]] = &value{kind: "string", str: scenario.GCRAState(theo, interval, ahead),
			expireAt: r.now + 1000*max(1, ms(ttl(r, theo, caller)))}
		return []int64{taken, left(ahead), 0, wait(ahead)}, nil
	})
}

// batch is a batch script's call as the script reads it: the limit's three
// numbers, the word (take, refill), the clock, and (cost, deadline) per
// request.
type batch struct {
	lim  [3]int64
	now  int64
	word string
	reqs [][2]int64
}

// readBatch reads a batch script's ARGV in the script's order, keeping the
// first problem: the limit's numbers and the clock, the word (badWord when
// it is none of words), the key, the count, then each request's cost and
// deadline.
func readBatch(keys, argv []string, names [3]string, word, badWord string, words ...string) (batch, error) {
	a := args{argv: argv}
	var b batch
	for i, name := range names {
		hi := int64(1e9)
		if i == 2 {
			hi = 1e11
		}
		b.lim[i] = a.int(i, name, 1, hi)
	}
	b.now = a.int(3, "now", 0, maxTime)
	b.word, _ = a.str(4)
	if !slices.Contains(words, b.word) {
		a.fail(badWord)
	}
	// Many keys take one request each.
	if len(keys) == 0 {
		a.fail("BADARG takes 1 to 64 keys, got 0")
	}
	n := (len(argv) - 5) / 2
	if a.bad == "" && len(keys) > 1 {
		if len(keys) > 64 || len(argv) < 7 || (len(argv)-5)%2 != 0 || n != len(keys) {
			a.fail(fmt.Sprintf("BADARG takes 2 to 64 keys and 5 arguments, then one request of 2 (cost, deadline) per key, got %d and %d", len(keys), len(argv)))
		}
		for i := 1; a.bad == "" && i < len(keys); i++ {
			if j := slices.Index(keys[:i], keys[i]); j >= 0 {
				a.fail(fmt.Sprintf("BADARG keys %d and %d are the same key: each request of a call of many keys needs its own", j+1, i+1))
			}
		}
	} else if a.bad == "" && (len(keys) != 1 || len(argv) < 7 || (len(argv)-5)%2 != 0 || n > 64) {
		a.fail(fmt.Sprintf("BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got %d and %d", len(keys), len(argv)))
	}
	if a.bad == "" {
		for i := 1; i <= n; i++ {
			c := a.int(3+2*i, fmt.Sprintf("cost of request %d", i), 0, 1e9)
			d := a.int(4+2*i, fmt.Sprintf("deadline of request %d", i), 0, maxTime)
			b.reqs = append(b.reqs, [2]int64{c, d})
		}
	}
	return b, a.err()
}

// each checks the clock, then decides the requests in turn: one run at or
// after its deadline answers expired and changes nothing, each other as
// one call of it alone, on r as the requests before it left it. When every
// request has expired, the key is not looked at.
func (b batch) each(r *Redis, one func(cost, now int64, caller bool) ([]int64, error)) ([]int64, error) {
	now, caller, err := clock(r, b.now, 0)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, q := range b.reqs {
		if q[1] > 0 && r.now >= q[1] {
			out = append(out, -1, 0, 0, 0)
			continue
		}
		reply, err := one(q[0], now, caller)
		if err != nil {
			return nil, err
		}
		out = append(out, reply...)
	}
	return out, nil
}
