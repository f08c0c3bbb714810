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
	tokens, ts := capacity, now
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
	if st != nil {
		level, ts, was := st[0], st[1], st[2]
		now = max(now, ts)
		if left := level - (now - ts); left > 0 {
			// Units of the rate it was poured at: whole ones exactly, a part
			// one rounded up, then no more than a full bucket.
			units := left / was
			if units >= capacity {
				water = full
			} else {
				water = min(full, units*unit+mulDivCeil(left-units*was, unit, was))
			}
		}
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
	theo := now
	if v := r.get(keys[0]); v != nil {
		if v.kind != "string" {
			return nil, ErrorReply(wrongType)
		}
		ts, is, _ := strings.Cut(v.str, "/")
		tat, ok1 := decimal(ts, 0, maxTime+2e15)
		was, ok2 := decimal(is, 1, 1e14)
		if !ok1 || !ok2 || strings.Count(v.str, "/") != 1 {
			return nil, ErrorReply(badState("a GCRA state <tat>/<interval>"))
		}
		// The lead over the later of now and the server's clock, in units
		// of the interval it was written with, rounded up, then capped.
		from := max(now, r.now)
		if tat > from && was != interval {
			lead := tat - from
			if units := lead / was; units >= burst {
				tat = from + tolerance
			} else {
				tat = from + units*interval + mulDivCeil(lead-units*was, interval, was)
			}
		}
		theo = max(now, min(tat, r.now+maxSkew+tolerance))
	}
	ahead := theo - now
	left := func(d int64) int64 { return max(0, burst-ceilDiv(d, interval)) }
	want := max(cost, 1)
	switch {
	case want > burst:
		return []int64{0, left(ahead), -1, ms(ahead)}, nil
	case ahead+want*interval > tolerance:
		return []int64{0, left(ahead), ms(ahead + want*interval - tolerance), ms(ahead)}, nil
	case cost == 0:
		return []int64{1, left(ahead), 0, ms(ahead)}, nil
	}
	theo += cost * interval
	ahead += cost * interval
	r.data[keys[0]] = &value{kind: "string", str: fmt.Sprintf("%d/%d", theo, interval),
		expireAt: r.now + 1000*max(1, ms(ttl(r, theo, caller)))}
	return []int64{1, left(ahead), 0, ms(ahead)}, nil
}
