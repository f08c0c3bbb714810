package luatest

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
)

func init() {
	models["fixed_window"] = modelFixedWindow
	models["sliding_window_counter"] = modelSlidingWindowCounter
	models["sliding_window_log"] = modelSlidingWindowLog
}

// The scripts' string states, as patterns: the script's tag, a time as a
// fixed number of digits, then numbers without leading zeros.
var (
	fixedWindowState          = regexp.MustCompile(`^1([0-9]{13})([1-9][0-9]*)$`)
	slidingWindowCounterState = regexp.MustCompile(`^c([0-9]{13})(0|[1-9][0-9]*)/(0|[1-9][0-9]*)/(0|[1-9][0-9]*)$`)
)

// windowSettle reads a window script's settle (ARGV[6] and ARGV[7] when
// there), after its deadline: -1 for a refund, 1 for a charge, 0 for an
// admit, the instant the reservation was counted at, and the count of
// arguments the call must have.
func windowSettle(a *args) (settle, held int64, nargs int) {
	word, ok := a.str(5)
	if !ok {
		return 0, 0, 5
	}
	switch word {
	case "refund":
		settle = -1
	case "charge":
		settle = 1
	default:
		a.fail("BADARG settle's take must be 'refund' or 'charge' (or absent, for an admit)")
		return 0, 0, 5
	}
	return settle, a.int(6, "at", 1, maxTime), 7
}

// heldErr is the error of a settle whose instant is more than maxSkew
// past the server's TIME.
func heldErr(r *Redis, held int64) error {
	if held > r.now+maxSkew {
		return ErrorReply(fmt.Sprintf("BADARG at must be at most %d µs past the server's TIME, got '%d'", maxSkew, held))
	}
	return nil
}

// modelFixedWindow restates fixed_window.lua: epoch windows, or the
// calendar periods a form gives, and the form's settle (take refund, take
// charge) by the window that holds at.
func modelFixedWindow(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	form := len(argv) > 5
	least := int64(1) // window 0 (the calendar's) only with a form
	if form {
		least = 0
	}
	limit := a.int(0, "limit", 1, 1e9)
	window := a.int(1, "window", least, 1e11)
	cost := a.int(2, "cost", 0, 1e9)
	now := a.int(3, "now", 0, maxTime)
	deadline := a.int(4, "deadline", 0, maxTime)
	nargs := 5
	if len(argv) >= 10 {
		nargs = 10
	}
	if err := a.finish(keys, "counter", nargs); err != nil {
		return nil, err
	}
	// settle: -1 refund, 1 charge, 0 take all; cal: the periods, in µs.
	var settle, at int64
	var cal []int64
	if len(argv) == 10 {
		switch argv[5] {
		case "all":
		case "refund":
			settle = -1
		case "charge":
			settle = 1
		default:
			a.fail("BADARG take must be 'all', 'refund' or 'charge'")
		}
		at = a.int(6, "at", 0, maxTime)
		b0 := a.int(7, "period_start", 0, 4e12)
		b1 := a.int(8, "period_end", 0, 4e12)
		b2 := a.int(9, "next_end", 0, 4e12)
		switch {
		case a.bad != "":
		case (at == 0) != (settle == 0):
			a.fail("BADARG at must be 0 with take all and an instant with refund or charge")
		case b0 == 0 && b1 == 0 && b2 == 0:
		case b0 > 0 && b0 < b1 && b1 < b2:
			cal = []int64{b0 * 1000, b1 * 1000, b2 * 1000}
		default:
			a.fail("BADARG period_start, period_end and next_end must be all 0 (the epoch) or increasing")
		}
	}
	if a.bad == "" && (window == 0) != (cal != nil) {
		a.fail("BADARG window must be from 1 to 1e11 with the epoch, and 0 with calendar periods")
	}
	if err := a.err(); err != nil {
		return nil, err
	}
	now, caller, err := clock(r, now, deadline)
	if err != nil {
		return nil, err
	}
	switch {
	case cal != nil && (now < cal[0] || now >= cal[2]):
		return nil, ErrorReply("BADARG the instant the call is judged at must lie in [period_start, next_end)")
	case cal != nil && r.now+maxSkew >= cal[2]:
		return nil, ErrorReply(fmt.Sprintf("BADARG next_end must be more than %d µs past the server's TIME", maxSkew))
	case settle != 0 && at > r.now+maxSkew:
		return nil, ErrorReply(fmt.Sprintf("BADARG at must be at most %d µs past the server's TIME", maxSkew))
	}
	// '1<t><n>': t, the newest counted call's ms, as 13 digits, then n
	// without a leading zero.
	st, err := stringState(r, keys[0], fixedWindowState, badState("a fixed window 1<t><n>"))
	if err == nil && st != nil && (st[0]*1000 > latest(r) || st[1] > 1e9) {
		err = ErrorReply(badState("a fixed window 1<t><n>"))
	}
	if err != nil {
		return nil, err
	}
	// span is the window that holds x: [start, end), or ok false before
	// the calendar's periods.
	span := func(x int64) (start, end int64, ok bool) {
		switch {
		case cal == nil:
			W := window * 1000
			return x / W * W, x/W*W + W, true
		case x >= cal[1]:
			return cal[1], cal[2], true
		case x >= cal[0]:
			return cal[0], cal[1], true
		}
		return 0, 0, false
	}
	var n, stored int64
	t := max(now, r.now) // a key that holds nothing counts from the later clock
	if st != nil {
		// The count lives in the window of its newest call.
		t, stored = st[0]*1000, st[1]
	}
	k, end, _ := span(now)
	kt, et, tok := span(t)
	switch {
	case tok && kt > k:
		k, end, n = kt, et, stored
	case tok && kt == k:
		n = stored
	}
	if settle != 0 {
		var moved int64
		ka, ea, ok := span(at)
		if live := ok && ea > now && cost > 0; live && settle < 0 && st != nil && tok && kt == ka {
			// A refund from the count of at's window, never below 0.
			moved = min(cost, stored)
			n = stored - moved
			if n == 0 {
				delete(r.data, keys[0])
			} else {
				r.data[keys[0]].str = fmt.Sprintf("1%013d%d", t/1000, n)
			}
		} else if live && settle > 0 {
			// A charge in at's window, or the stored count's if later.
			var c int64
			tt := at
			if st != nil && tok && kt >= ka {
				ka, ea, c, tt = kt, et, stored, max(at, t)
			}
			moved = min(cost, 1e9-c)
			if moved > 0 {
				writeString(r, keys[0], ttl(r, ea, caller), fmt.Sprintf("1%013d%d", tt/1000, c+moved))
				if ka >= k {
					k, end, n = ka, ea, c+moved
				}
			}
		}
		left := max(0, limit-n)
		var retry, reset int64
		if left == 0 {
			retry = ms(end - now)
		}
		if n > 0 {
			reset = ms(end - now)
		}
		return []int64{b2i(moved > 0), left, retry, reset}, nil
	}
	var reset int64
	if n > 0 {
		reset = ms(end - now)
	}
	want := max(cost, 1)
	switch {
	case want > limit:
		return []int64{0, max(0, limit-n), -1, reset}, nil
	case n+want > limit:
		return []int64{0, max(0, limit-n), ms(end - now), reset}, nil
	case cost == 0:
		return []int64{1, limit - n, 0, reset}, nil
	}
	n += cost
	writeString(r, keys[0], ttl(r, end, caller), fmt.Sprintf("1%013d%d", max(t, now)/1000, n))
	return []int64{1, limit - n, 0, ms(end - now)}, nil
}

func modelSlidingWindowCounter(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	limit := a.int(0, "limit", 1, 1e9)
	window := a.int(1, "window", 1, 1e11)
	cost := a.int(2, "cost", 0, 1e9)
	now := a.int(3, "now", 0, maxTime)
	deadline := a.int(4, "deadline", 0, maxTime)
	settle, held, nargs := windowSettle(&a)
	if err := a.finish(keys, "counts", nargs); err != nil {
		return nil, err
	}
	now, caller, err := clock(r, now, deadline)
	if err == nil && settle != 0 {
		err = heldErr(r, held)
	}
	if err != nil {
		return nil, err
	}
	// 'c<s><d>/<cur>/<prev>': s, the current count's window's start in ms,
	// as 13 digits, then the ms from s to its newest call and the counts,
	// without leading zeros.
	what := badState("a sliding window counter c<s><d>/<cur>/<prev>")
	st, err := stringState(r, keys[0], slidingWindowCounterState, what)
	if err == nil && st != nil {
		// In µs: s, t, cur, prev.
		st = []int64{st[0] * 1000, (st[0] + st[1]) * 1000, st[2], st[3]}
		if st[1] > latest(r) || st[1]-st[0] >= 1e14 || st[2] > 1e15 || st[3] > 2e15 {
			err = ErrorReply(what)
		}
	}
	if err != nil {
		return nil, err
	}
	W := window * 1000
	// A settle is judged at the later of its clock and held.
	base := now
	if settle != 0 {
		base = max(now, held)
	}
	w, at := base/W, base
	var c, p int64
	if st == nil {
		// A key that holds nothing counts from the later clock.
		at = max(base, r.now)
		w = at / W
	}
	t := at
	if st != nil {
		// The current count sits at its newest call, the previous one just
		// before the current count's window began: each counts in the window
		// of the current length that holds it.
		s, cur, prev := st[0], st[2], st[3]
		t = st[1]
		wt, ws := t/W, floorDiv(s-1, W)
		if wt > w {
			w, at = wt, wt*W
		}
		for _, x := range []struct{ w, n int64 }{{wt, cur}, {ws, prev}} {
			switch x.w {
			case w:
				c += x.n
			case w - 1:
				p += x.n
			}
		}
		p = min(p, 2e15)
	}
	// A settle moves what it can in held's window, a refund then in the
	// next one too, never past the current window (a charge whose window
	// slid out: the current one), then answers as a peek.
	var moved int64
	switch wh := held / W; {
	case settle < 0 && wh == w:
		moved = min(cost, c)
		c -= moved
	case settle < 0 && wh == w-1:
		moved = min(cost, p)
		p -= moved
		more := min(cost-moved, c)
		c -= more
		moved += more
	case settle > 0 && wh == w-1:
		moved = min(cost, 2e15-p)
		p += moved
	case settle > 0:
		moved = min(cost, 1e15-c)
		c += moved
	}
	if settle != 0 {
		cost = 0
	}
	start := w * W
	// est is the estimate at x >= start if nothing more is admitted.
	est := func(x int64) int64 {
		switch e := x - start; {
		case e < W:
			return c + mulDivCeil(p, W-e, W)
		case e < 2*W:
			return mulDivCeil(c, 2*W-e, W)
		}
		return 0
	}
	want := max(cost, 1)
	remaining := max(0, limit-est(at))
	var reset int64
	switch {
	case c > 0:
		reset = ms(start + 2*W - now)
	case p > 0:
		reset = ms(start + W - now)
	}
	if moved > 0 {
		// held is a caller's clock: the key keeps maxSkew more.
		writeString(r, keys[0], ttl(r, start+2*W, true), fmt.Sprintf("c%013d%d/%d/%d", start/1000, max(t, at)/1000-start/1000, c, p))
	}
	if want > limit {
		return []int64{0, remaining, -1, reset}, nil
	}
	if est(at)+want > limit {
		// The estimate only falls while nothing is admitted: search for the
		// first instant it admits.
		lo, hi := at, start+2*W
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if est(mid)+want <= limit {
				hi = mid
			} else {
				lo = mid
			}
		}
		if settle != 0 {
			return []int64{min(moved, 1), remaining, ms(hi - now), reset}, nil
		}
		return []int64{0, remaining, ms(hi - now), reset}, nil
	}
	if settle != 0 {
		return []int64{min(moved, 1), remaining, 0, reset}, nil
	}
	if cost == 0 {
		return []int64{1, remaining, 0, reset}, nil
	}
	writeString(r, keys[0], ttl(r, start+2*W, caller), fmt.Sprintf("c%013d%d/%d/%d", start/1000, max(t, at)/1000-start/1000, c+cost, p))
	return []int64{1, remaining - cost, 0, ms(start + 2*W - now)}, nil
}

var memberRE = regexp.MustCompile(`^(0|[1-9][0-9]*):([1-9][0-9]*)$`)

// logTime is the time of a log member, or false when it is not a member the
// script writes: '<us>:<n>' scored by <us>, no later than latest, n from 1
// to 10000.
func logTime(name string, score float64, latest int64) (int64, bool) {
	if score != math.Trunc(score) || score < 0 || score > float64(latest) || math.Signbit(score) {
		return 0, false
	}
	at := int64(score)
	sub := memberRE.FindStringSubmatch(name)
	if sub == nil || sub[1] != strconv.FormatInt(at, 10) {
		return 0, false
	}
	n, err := strconv.ParseInt(sub[2], 10, 64)
	return at, err == nil && n <= 10000
}

func modelSlidingWindowLog(r *Redis, keys, argv []string) ([]int64, error) {
	a := args{argv: argv}
	limit := a.int(0, "limit", 1, 10000)
	window := a.int(1, "window", 1, 1e11)
	cost := a.int(2, "cost", 0, 1e9)
	now := a.int(3, "now", 0, maxTime)
	deadline := a.int(4, "deadline", 0, maxTime)
	settle, held, nargs := windowSettle(&a)
	if err := a.finish(keys, "log", nargs); err != nil {
		return nil, err
	}
	now, caller, err := clock(r, now, deadline)
	if err == nil && settle != 0 {
		err = heldErr(r, held)
	}
	if err != nil {
		return nil, err
	}
	type member struct {
		name  string
		score float64
	}
	var log []member // in ZRANGE's order: by score, then by name
	notLog := ErrorReply("BADSTATE the key is not a sliding window log; it is left untouched")
	var last int64
	if v := r.get(keys[0]); v != nil {
		if v.kind != "zset" {
			return nil, ErrorReply(wrongType)
		}
		for m, s := range v.zset {
			log = append(log, member{m, s})
		}
		sort.Slice(log, func(i, j int) bool {
			if log[i].score != log[j].score {
				return log[i].score < log[j].score
			}
			return log[i].name < log[j].name
		})
		// Only the oldest and the newest member are checked (and below, the
		// one a wait is read from): reading them all would cost O(limit).
		var ok1, ok2 bool
		_, ok1 = logTime(log[0].name, log[0].score, latest(r))
		last, ok2 = logTime(log[len(log)-1].name, log[len(log)-1].score, latest(r))
		if len(log) > 10000 || !ok1 || !ok2 {
			return nil, notLog
		}
	}
	own := now
	if settle != 0 {
		now = max(now, held)
	}
	if len(log) > 0 {
		now = max(now, last)
	} else {
		now = max(now, r.now) // a key that holds nothing: the later clock
	}
	W := window * 1000
	gone := now - W
	first := sort.Search(len(log), func(i int) bool { return log[i].score > float64(gone) })
	live := int64(len(log) - first)
	// A settle moves what it can, then answers as a peek: a refund removes
	// up to cost members at held or later, earliest first (while held is in
	// the window), a charge
	// logs at held (or now, once held has left), up to 10000 members.
	var moved int64
	if settle != 0 && cost > 0 {
		z := map[string]float64{}
		for _, m := range log {
			z[m.name] = m.score
		}
		if settle < 0 && held > gone {
			// Up to cost members at held or later, the earliest instants
			// first, the highest numbers within one: those left at an
			// instant stay numbered 1 to their count.
			// Each instant's first member in ZRANGE's order is read and
			// checked, as the script reads it.
			counts := map[float64]int64{}
			var firsts []member
			for _, m := range log {
				if m.score >= float64(held) {
					if counts[m.score] == 0 {
						firsts = append(firsts, m)
					}
					counts[m.score]++
				}
			}
			for _, f := range firsts {
				if moved == cost {
					break
				}
				t, ok := logTime(f.name, f.score, latest(r))
				if !ok {
					return nil, notLog
				}
				k := counts[f.score]
				j := min(cost-moved, k)
				for i := int64(0); i < j; i++ {
					name := fmt.Sprintf("%d:%d", t, k-i)
					if sc, ok := z[name]; !ok || sc != float64(t) {
						return nil, notLog
					}
					delete(z, name)
				}
				moved += j
			}
		} else if settle > 0 {
			us := now
			if held > gone {
				us = held
			}
			if live+cost > 10000 {
				return nil, ErrorReply(fmt.Sprintf("BADARG a charge of %d would leave %d members in the log, past the 10000 it holds; nothing changed", cost, live+cost))
			}
			for _, m := range log[:first] {
				if _, ok := logTime(m.name, m.score, latest(r)); !ok {
					return nil, notLog
				}
				delete(z, m.name)
			}
			var n int64
			for _, sc := range z {
				if sc == float64(us) {
					n++
				}
			}
			for i := int64(1); i <= cost; i++ {
				z[fmt.Sprintf("%d:%d", us, n+i)] = float64(us)
			}
			moved = cost
		}
		if moved > 0 {
			log = log[:0]
			for name, sc := range z {
				log = append(log, member{name, sc})
			}
			sort.Slice(log, func(i, j int) bool {
				if log[i].score != log[j].score {
					return log[i].score < log[j].score
				}
				return log[i].name < log[j].name
			})
			// The log is read again as a call reads it: a refund can leave
			// an unchecked foreign member newest (the members between the
			// oldest and the newest are not read), and then the script
			// keeps the TTL and counts nothing.
			ok1, ok2 := true, true
			if len(log) > 0 {
				_, ok1 = logTime(log[0].name, log[0].score, latest(r))
				last, ok2 = logTime(log[len(log)-1].name, log[len(log)-1].score, latest(r))
			}
			switch {
			case len(log) == 0:
				delete(r.data, keys[0])
			case !ok1 || !ok2:
				r.data[keys[0]].zset = z
				log = nil
			default:
				r.data[keys[0]] = &value{kind: "zset", zset: z, expireAt: r.now + 1000*max(1, ms(ttl(r, last+W, true)))}
			}
			first = sort.Search(len(log), func(i int) bool { return log[i].score > float64(gone) })
			live = int64(len(log) - first)
		}
		cost = 0
	}
	var reset int64
	if live > 0 {
		reset = ms(last + W - own)
	}
	remaining := max(0, limit-live)
	want := max(cost, 1)
	switch {
	case want > limit:
		return []int64{0, remaining, -1, reset}, nil
	case live+want > limit:
		// The (limit-want+1)-th newest member must leave first.
		m := log[len(log)-int(limit-want+1)]
		at, ok := logTime(m.name, m.score, latest(r))
		if !ok {
			return nil, notLog
		}
		if settle != 0 {
			return []int64{min(moved, 1), remaining, ms(at + W - own), reset}, nil
		}
		return []int64{0, remaining, ms(at + W - own), reset}, nil
	case settle != 0:
		return []int64{min(moved, 1), remaining, 0, reset}, nil
	case cost == 0:
		return []int64{1, remaining, 0, reset}, nil
	}
	// Every member that left the window is checked before any is removed.
	for _, m := range log[:first] {
		if _, ok := logTime(m.name, m.score, latest(r)); !ok {
			return nil, notLog
		}
	}
	z := map[string]float64{}
	var n int64
	for _, m := range log[first:] {
		z[m.name] = m.score
		if m.score == float64(now) {
			n++
		}
	}
	for i := int64(1); i <= cost; i++ {
		z[fmt.Sprintf("%d:%d", now, n+i)] = float64(now)
	}
	r.data[keys[0]] = &value{kind: "zset", zset: z, expireAt: r.now + 1000*max(1, ms(ttl(r, now+W, caller)))}
	return []int64{1, remaining - cost, 0, ms(now + W - own)}, nil
}
