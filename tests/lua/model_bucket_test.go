package luatest

import (
	"fmt"
	"strings"
)

func init() {
	models["token_bucket"] = modelTokenBucket
	models["leaky_bucket"] = modelLeakyBucket
	models["gcra"] = modelGCRA
}

func modelTokenBucket(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	capacity := a.int(0, "capacity", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(4, "cost", 0, 1e9)
	now := a.int(5, "now", 0, maxTime)
	if refill, _ := a.str(3); refill != "smooth" && refill != "interval" {
		a.fail("BADARG refill must be 'smooth' or 'interval'")
	}
	if err := a.finish(keys, "bucket", 6); err != nil {
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
	now, caller, err := clock(r, now)
	if err != nil {
		return nil, err
	}
	st, err := hashState(r, keys[0], []string{"tokens", "ts"}, []int64{0, 0}, []int64{1e9, maxTime}, badState("a token bucket {tokens, ts}"))
	if err != nil {
		return nil, err
	}
	// A key that holds nothing is a full bucket at the later of the caller's
	// clock and the server's.
	tokens, ts := capacity, max(now, r.now)
	if st != nil {
		tokens, ts = st[0], st[1]
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
	writeHash(r, keys[0], ttl(r, full, caller), "tokens", held, "ts", mark)
	return []int64{1, held, 0, ms(full - own)}, nil
}

func modelLeakyBucket(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	capacity := a.int(0, "capacity", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(3, "cost", 0, 1e9)
	now := a.int(4, "now", 0, maxTime)
	if err := a.finish(keys, "bucket", 5); err != nil {
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
	now, caller, err := clock(r, now)
	if err != nil {
		return nil, err
	}
	st, err := hashState(r, keys[0], []string{"level", "ts", "unit"}, []int64{0, 0, 1}, []int64{1e15, maxTime, 1e14}, badState("a leaky bucket {level, ts, unit}"))
	if err != nil {
		return nil, err
	}
	own := now
	var water int64
	if st == nil {
		now = max(now, r.now)
	} else {
		level, ts, was := st[0], st[1], st[2]
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
	writeHash(r, keys[0], ttl(r, now+water, caller), "level", water, "ts", now, "unit", unit)
	return []int64{1, remaining - cost, 0, ms(now + water - own)}, nil
}

func modelGCRA(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	burst := a.int(0, "burst", 1, 1e9)
	rate := a.int(1, "rate", 1, 1e9)
	period := a.int(2, "period", 1, 1e11)
	cost := a.int(3, "cost", 0, 1e9)
	now := a.int(4, "now", 0, maxTime)
	if err := a.finish(keys, "tat", 5); err != nil {
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
	now, caller, err := clock(r, now)
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
		f := strings.Split(v.str, "/")
		var tat, was, at int64
		ok := len(f) == 3
		if ok {
			var ok1, ok2, ok3 bool
			tat, ok1 = decimal(f[0], 0, maxTime+1e15)
			was, ok2 = decimal(f[1], 1, 1e14)
			at, ok3 = decimal(f[2], 0, maxTime)
			ok = ok1 && ok2 && ok3 && at <= tat && tat-at <= 1e15
		}
		if !ok {
			return nil, ErrorReply(badState("a GCRA state <tat>/<interval>/<at>"))
		}
		// The lead on the last write's clock in intervals of the current
		// rate: whole ones exactly, a part one rounded up, then no more than
		// a full burst.
		lead := tat - at
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
	r.data[keys[0]] = &value{kind: "string", str: fmt.Sprintf("%d/%d/%d", theo, interval, now),
		expireAt: r.now + 1000*max(1, ms(ttl(r, theo, caller)))}
	return []int64{1, left(ahead), 0, wait(ahead)}, nil
}
