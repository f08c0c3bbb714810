package luatest

import (
	"fmt"
	"regexp"
)

func init() {
	models["token_bucket"] = modelTokenBucket
	models["leaky_bucket"] = modelLeakyBucket
	models["gcra"] = modelGCRA
	models["gcra_at_most"] = gcraModel(true)
}

// The scripts' string states, as patterns: the script's tag, a time as a
// fixed number of digits, then numbers without leading zeros.
var (
	tokenBucketState = regexp.MustCompile(`^-([0-9]{16})(0|[1-9][0-9]*)$`)
	leakyBucketState = regexp.MustCompile(`^l([0-9]{16})([1-9][0-9]*)/(0|[1-9][0-9]*)$`)
)

func modelTokenBucket(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	capacity := a.int(0, "capacity", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(4, "cost", 0, 1e9)
	now := a.int(5, "now", 0, maxTime)
	deadline := a.int(6, "deadline", 0, maxTime)
	if refill, _ := a.str(3); refill != "smooth" && refill != "interval" {
		a.fail("BADARG refill must be 'smooth' or 'interval'")
	}
	if err := a.finish(keys, "bucket", 7); err != nil {
		return nil, err
	}
	smooth := argv[3] == "smooth"
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
	now, caller, err := clock(r, now, deadline)
	if err != nil {
		return nil, err
	}
	// '-<ts><tokens>': ts as 16 digits, tokens without a leading zero.
	st, err := stringState(r, keys[0], tokenBucketState, badState("a token bucket -<ts><tokens>"))
	if err == nil && st != nil && (st[0] > latest(r) || st[1] > 1e9) {
		err = ErrorReply(badState("a token bucket -<ts><tokens>"))
	}
	if err != nil {
		return nil, err
	}
	// A key that holds nothing is a full bucket at the later of the caller's
	// clock and the server's.
	tokens, ts := capacity, max(now, r.now)
	if st != nil {
		ts, tokens = st[0], st[1]
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
	want := max(cost, 1)
	switch {
	case want > capacity:
		return []int64{0, held, -1, ms(reset)}, nil
	case have < want && at(have, ts, want) > now:
		return []int64{0, held, ms(at(have, ts, want) - own), ms(reset)}, nil
	case cost == 0:
		return []int64{1, held, 0, ms(reset)}, nil
	}
	held -= cost
	full := at(held, mark, capacity)
	writeString(r, keys[0], ttl(r, full, caller), fmt.Sprintf("-%016d%d", mark, held))
	return []int64{1, held, 0, ms(full - own)}, nil
}

func modelLeakyBucket(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	capacity := a.int(0, "capacity", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(3, "cost", 0, 1e9)
	now := a.int(4, "now", 0, maxTime)
	deadline := a.int(5, "deadline", 0, maxTime)
	if err := a.finish(keys, "bucket", 6); err != nil {
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
	// leading zeros; the level is unit + more.
	st, err := stringState(r, keys[0], leakyBucketState, badState("a leaky bucket l<ts><unit>/<more>"))
	if err == nil && st != nil {
		st[2] += st[1]
		if st[0] > latest(r) || st[1] > 1e14 || st[2] > 1e15 {
			err = ErrorReply(badState("a leaky bucket l<ts><unit>/<more>"))
		}
	}
	if err != nil {
		return nil, err
	}
	own := now
	var water int64
	if st == nil {
		now = max(now, r.now)
	} else {
		ts, was, level := st[0], st[1], st[2]
		now = max(now, ts)
		// The level at the last pour in units of the current rate: whole
		// ones exactly, a part one rounded up, then no more than a full
		// bucket; it drains at the current rate since.
		if units := level / was; units >= capacity {
			level = full
		} else {
			level = min(full, units*unit+mulDivCeil(level-units*was, unit, was))
		}
		water = max(0, level-(now-ts))
	}
	remaining := (full - water) / unit
	var reset int64
	if water > 0 {
		reset = ms(now + water - own)
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

var modelGCRA = gcraModel(false)

// gcraModel is gcra.lua restated, or with atMost gcra_at_most.lua: the
// same state and judgement, and a call of n that takes what is left, up to
// n, instead of a cost that passes whole or not at all.
func gcraModel(atMost bool) model {
	return func(r *Redis, keys, argv []string) ([]int64, error) {
		return gcra(r, keys, argv, atMost)
	}
}

func gcra(r *Redis, keys, argv []string, atMost bool) ([]int64, error) {
	a := args{argv: argv}
	burst := a.int(0, "burst", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	var cost int64
	if atMost {
		cost = a.int(3, "n", 1, 1e9)
	} else {
		cost = a.int(3, "cost", 0, 1e9)
	}
	now := a.int(4, "now", 0, maxTime)
	deadline := a.int(5, "deadline", 0, maxTime)
	if err := a.finish(keys, "tat", 6); err != nil {
		return nil, err
	}
	if rate > period*1000 {
		return nil, ErrorReply("BADARG rate must be at most one per µs (period*1000)")
	}
	interval := ceilDiv(period*1000, rate)
	tolerance := mulSat(burst, interval)
	if tolerance > 1e15 {
		return nil, ErrorReply("BADARG burst*period/rate must be at most 1e15 µs (31 years)")
	}
	now, caller, err := clock(r, now, deadline)
	if err != nil {
		return nil, err
	}
	own := now
	v := r.get(keys[0])
	if v == nil {
		now = max(now, r.now)
	}
	theo := now
	if v != nil {
		if v.kind != "string" {
			return nil, ErrorReply(wrongType)
		}
		// 'g<tat><interval>/<more>': the TAT as 16 digits, the interval it
		// counts in, and its lead on the clock of the write that set it,
		// less one interval.
		tat, was, lead, err := parseGCRA(v.str)
		at := tat - lead
		if err != nil || was > 1e14 || lead > 1e15 || at < 0 || at > latest(r) {
			return nil, ErrorReply(badState("a GCRA state g<tat><interval>/<more>"))
		}
		// The lead on the last write's clock in intervals of the current
		// rate: whole ones exactly, a part one rounded up, then no more than
		// a full burst.
		if units := lead / was; units >= burst {
			lead = tolerance
		} else {
			lead = min(tolerance, units*interval+mulDivCeil(lead-units*was, interval, was))
		}
		theo = max(now, at+lead)
	}
	ahead := theo - now
	left := func(d int64) int64 { return max(0, burst-ceilDiv(d, interval)) }
	wait := func(d int64) int64 { return ms(d + now - own) }
	var reset int64
	if ahead > 0 {
		reset = wait(ahead)
	}
	if atMost {
		// What is left, up to n; nothing left waits for one.
		if left(ahead) == 0 {
			return []int64{0, 0, wait(ahead + interval - tolerance), reset}, nil
		}
		cost = min(cost, left(ahead))
	}
	want := max(cost, 1)
	switch {
	case want > burst:
		return []int64{0, left(ahead), -1, reset}, nil
	case ahead+want*interval > tolerance:
		return []int64{0, left(ahead), wait(ahead + want*interval - tolerance), reset}, nil
	case cost == 0:
		return []int64{1, left(ahead), 0, reset}, nil
	}
	theo += cost * interval
	ahead += cost * interval
	r.data[keys[0]] = &value{kind: "string", str: fmt.Sprintf("g%016d%d/%d", theo, interval, ahead-interval),
		expireAt: r.now + 1000*max(1, ms(ttl(r, theo, caller)))}
	if atMost {
		return []int64{cost, left(ahead), 0, wait(ahead)}, nil
	}
	return []int64{1, left(ahead), 0, wait(ahead)}, nil
}
