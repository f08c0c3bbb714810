package tier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// Scripts are the generated bindings' scripts: the tiers send the embedded
// text, not a fresh read of lua/.
var Scripts = map[string]*redis.Script{
	"token_bucket":           bindings.TokenBucketScript,
	"fixed_window":           bindings.FixedWindowScript,
	"sliding_window_log":     bindings.SlidingWindowLogScript,
	"sliding_window_counter": bindings.SlidingWindowCounterScript,
	"leaky_bucket":           bindings.LeakyBucketScript,
	"gcra":                   bindings.GCRAScript,
	"multi":                  bindings.MultiScript,
	"concurrency":            bindings.ConcurrencyScript,
}

// rawArgs reads a step's ARGV back into Go values for the typed API; ok is
// false when an argument is not an integer, which the typed API cannot
// even express.
type rawArgs struct {
	vals []string
	ok   bool
}

func (a *rawArgs) int(i int) int64 {
	if i >= len(a.vals) {
		a.ok = false
		return 0
	}
	n, err := strconv.ParseInt(a.vals[i], 10, 64)
	a.ok = a.ok && err == nil
	return n
}

func (a *rawArgs) str(i int) string {
	if i >= len(a.vals) {
		a.ok = false
		return ""
	}
	return a.vals[i]
}

func (a *rawArgs) ms(i int) time.Duration { return time.Duration(a.int(i)) * time.Millisecond }

// typedCall is one call through the typed API, the ratelimit package (over
// the generated bindings) where it can express the call; the reply comes
// back as the script's integers.
type typedCall func(ctx context.Context, c redis.Scripter, keys []string, a *rawArgs) ([]any, error)

// shape says where a script's ARGV holds what a ratelimit.Limit says: the
// burst (for the window scripts, the limit, which is the rate too), the
// rate, the period, the token bucket's refill, gcra's take, the cost, the
// caller clock and the deadline: ratelimit sends its context's deadline,
// so a step with a deadline of its own goes raw. The mapping itself is
// ratelimit's (scripts.go); this only reads a step's ARGV back into a
// Limit.
type shape struct {
	alg                 ratelimit.Algorithm
	burst, rate, period int
	refill, take        int // -1: no such argument
	cost, now, deadline int
}

var shapes = map[string]shape{
	"gcra":                   {ratelimit.GCRA, 0, 1, 2, -1, 4, 5, 3, 6},
	"token_bucket":           {ratelimit.TokenBucket, 0, 1, 2, 4, -1, 5, 3, 6},
	"leaky_bucket":           {ratelimit.LeakyBucket, 0, 1, 2, -1, -1, 3, 4, 5},
	"fixed_window":           {ratelimit.FixedWindow, 0, 0, 1, -1, -1, 2, 3, 4},
	"sliding_window_log":     {ratelimit.SlidingWindowLog, 0, 0, 1, -1, -1, 2, 3, 4},
	"sliding_window_counter": {ratelimit.SlidingWindowCounter, 0, 0, 1, -1, -1, 2, 3, 4},
}

var typed = map[string]typedCall{}

func init() {
	for name, sh := range shapes {
		typed[name] = viaRatelimit(sh)
	}
	// ratelimit sends one request a call (its coalescer batches callers'):
	// a step of several, a word BindingsWord names, or a deadline of the
	// step's own, goes through the bindings.
	typed["gcra"] = either(typed["gcra"], viaBatch("gcra"))
	typed["token_bucket"] = either(typed["token_bucket"], viaBatch("token_bucket"))
	typed["multi"] = viaMulti
	typed["concurrency"] = viaLeases
}

// BindingsWord reports whether a batch script's word has no ratelimit call
// of its own: gcra's take at_most, refund and charge, token_bucket's
// refills that refund or charge.
func BindingsWord(w string) bool {
	return w == "at_most" || w == "refund" || w == "charge" || strings.HasSuffix(w, "_refund") || strings.HasSuffix(w, "_charge")
}

// either is a, ratelimit, for one request that takes all with no deadline
// of its own, and b for any other call of a batch script.
func either(a, b typedCall) typedCall {
	return func(ctx context.Context, c redis.Scripter, keys []string, args *rawArgs) ([]any, error) {
		if v := args.vals; len(v) == 7 && !BindingsWord(v[4]) && v[6] == "0" {
			return a(ctx, c, keys, args)
		}
		return b(ctx, c, keys, args)
	}
}

// viaRatelimit makes one call as a ratelimit user would: a Limiter for the
// step's limit, the step's clock as WithClock (0: the server's clock), and
// AllowN, or Peek for a cost of 0. The scenario's key "name:{tag}" is the
// limiter's prefix "name:" and key "tag", so both paths share its state.
// What ratelimit refuses before sending (ErrInvalidLimit and the like) is
// ErrNotTyped: the step then goes raw, for the script to answer.
func viaRatelimit(sh shape) typedCall {
	return func(ctx context.Context, c redis.Scripter, keys []string, a *rawArgs) ([]any, error) {
		if len(keys) != 1 {
			return nil, ErrNotTyped
		}
		key := keys[0]
		alg := sh.alg
		if sh.refill >= 0 && a.str(sh.refill) == "interval" {
			alg = ratelimit.TokenBucketInterval
		} else if sh.refill >= 0 && a.str(sh.refill) != "smooth" {
			a.ok = false
		}
		if sh.take >= 0 && a.str(sh.take) != "all" {
			a.ok = false
		}
		limit := ratelimit.Limit{Burst: a.int(sh.burst), Rate: a.int(sh.rate), Period: a.ms(sh.period)}
		cost, now, deadline := a.int(sh.cost), a.int(sh.now), a.int(sh.deadline)
		prefix, tag, found := strings.Cut(key, "{")
		tag = strings.TrimSuffix(tag, "}")
		if !a.ok || len(a.vals) != max(sh.cost, sh.now, sh.deadline)+1 || deadline != 0 || !found || tag == "" {
			return nil, ErrNotTyped
		}
		opts := []ratelimit.Option{ratelimit.WithAlgorithm(alg), ratelimit.WithPrefix(prefix)}
		if now != 0 {
			opts = append(opts, ratelimit.WithClock(func() time.Time { return time.UnixMicro(now) }))
		}
		rc, err := limiterClient(c)
		if err != nil {
			return nil, err
		}
		l, err := ratelimit.New(rc, "scenario", limit, opts...)
		if err != nil || !keptAsIs(prefix, tag, key) {
			return nil, ErrNotTyped
		}
		var d ratelimit.Decision
		if cost == 0 {
			d, err = l.Peek(ctx, tag)
		} else {
			d, err = l.AllowN(ctx, tag, cost)
		}
		if refusedBeforeSending(err) {
			return nil, ErrNotTyped
		}
		return reply(d), err
	}
}

// refusedBeforeSending reports whether ratelimit refused a call itself
// (ErrInvalid that is not a script's answer), or the script refused its
// caller clock, which only the server can tell.
func refusedBeforeSending(err error) bool {
	var se *bindings.ScriptError
	return errors.Is(err, ratelimit.ErrInvalid) && (!errors.As(err, &se) || strings.HasPrefix(se.Message, "now must be 0"))
}

// reply turns a Decision back into the script's reply: Never is -1 ms.
func reply(d ratelimit.Decision) []any {
	allowed, retry := int64(0), d.RetryAfter.Milliseconds()
	if d.Allowed {
		allowed = 1
	}
	if d.RetryAfter == ratelimit.Never {
		retry = -1
	}
	return []any{allowed, d.Remaining, retry, d.ResetAfter.Milliseconds()}
}

// viaMulti makes one call as a ratelimit user would with an Atomic rule: a GCRA
// Limiter per key, "name:{tag}" being the limiter's prefix "name:" and the
// key "tag", and AllowN, or Peek for a cost of 0; the reply is rebuilt from
// the Decision's parts, the binding limit being the first denial with the
// longest wait.
func viaMulti(ctx context.Context, c redis.Scripter, keys []string, a *rawArgs) ([]any, error) {
	cost, now, deadline := a.int(0), a.int(1), a.int(2)
	if len(keys) == 0 || len(a.vals) != 3+3*len(keys) || deadline != 0 {
		return nil, ErrNotTyped
	}
	var opts []ratelimit.Option
	if now != 0 {
		opts = append(opts, ratelimit.WithClock(func() time.Time { return time.UnixMicro(now) }))
	}
	var tag string
	limiters := make([]*ratelimit.Limiter, len(keys))
	for i, key := range keys {
		prefix, t, found := strings.Cut(key, "{")
		t = strings.TrimSuffix(t, "}")
		limit := ratelimit.Limit{Burst: a.int(3 + 3*i), Rate: a.int(4 + 3*i), Period: a.ms(5 + 3*i)}
		if !a.ok || !found || (i > 0 && t != tag) || t == "" {
			return nil, ErrNotTyped
		}
		tag = t
		rc, err := limiterClient(c)
		if err != nil {
			return nil, err
		}
		l, err := ratelimit.New(rc, fmt.Sprintf("limit%d", i), limit, append(opts, ratelimit.WithPrefix(prefix))...)
		if err != nil || !keptAsIs(prefix, t, key) {
			return nil, ErrNotTyped
		}
		limiters[i] = l
	}
	m, err := ratelimit.Atomic(limiters...)
	if err != nil {
		return nil, ErrNotTyped
	}
	var d ratelimit.Decision
	if cost == 0 {
		d, err = m.Peek(ctx, tag)
	} else {
		d, err = m.AllowN(ctx, tag, cost)
	}
	if refusedBeforeSending(err) {
		return nil, ErrNotTyped
	}
	if err != nil {
		return nil, err
	}
	ds := d.Parts
	if len(ds) == 0 {
		ds = []ratelimit.Decision{d}
	}
	out := []any{int64(1), int64(0)}
	if !d.Allowed {
		binding := -1
		for i, p := range ds {
			if !p.Allowed && (binding < 0 || p.RetryAfter > ds[binding].RetryAfter) {
				binding = i
			}
		}
		out = []any{int64(0), int64(binding + 1)}
	}
	for _, d := range ds {
		r := reply(d)
		out = append(out, r[1], r[2], r[3])
	}
	return out, nil
}

// viaLeases makes one call of concurrency.lua through the generated typed
// API (bindings.Concurrency): ratelimit's inflight.Limiter makes its own
// lease ids, so it cannot replay a table's. What the bindings refuse before
// sending (an op that is no word, numbers out of bounds) is ErrNotTyped.
func viaLeases(ctx context.Context, c redis.Scripter, keys []string, a *rawArgs) ([]any, error) {
	p := bindings.ConcurrencyParams{Op: bindings.ConcurrencyOp(a.str(0)), Lease: a.str(1), Limit: a.int(2), TTL: a.ms(3),
		Now: instant(a.int(4)), Deadline: instant(a.int(5))}
	if len(keys) != 1 || !a.ok || len(a.vals) != 6 {
		return nil, ErrNotTyped
	}
	r, err := bindings.Concurrency(ctx, c, keys[0], p)
	var ae *bindings.ArgError
	if errors.As(err, &ae) {
		return nil, ErrNotTyped
	}
	allowed := int64(0)
	if r.Allowed {
		allowed = 1
	}
	return []any{allowed, r.Remaining, r.RetryAfter.Milliseconds(), r.ResetAfter.Milliseconds()}, err
}

// viaBatch makes one call of a batch script (gcra, token_bucket) through
// the generated typed API, every request of the step in it. What the
// bindings refuse before sending is ErrNotTyped.
func viaBatch(script string) typedCall {
	return func(ctx context.Context, c redis.Scripter, keys []string, a *rawArgs) ([]any, error) {
		if len(keys) == 0 || len(a.vals) < 7 || (len(a.vals)-5)%2 != 0 {
			return nil, ErrNotTyped
		}
		type decision struct {
			Allowed, Remaining     int64
			RetryAfter, ResetAfter time.Duration
		}
		var ds []decision
		var err error
		n := (len(a.vals) - 5) / 2
		switch script {
		case "gcra":
			p := bindings.GCRAParams{Burst: a.int(0), Rate: a.int(1), Period: a.ms(2), Now: instant(a.int(3)), Take: bindings.GCRATake(a.str(4))}
			for i := 0; i < n; i++ {
				p.Requests = append(p.Requests, bindings.GCRARequest{Cost: a.int(5 + 2*i), Deadline: instant(a.int(6 + 2*i))})
			}
			if !a.ok {
				return nil, ErrNotTyped
			}
			var r bindings.GCRAResult
			r, err = bindings.GCRA(ctx, c, keys, p)
			for _, d := range r.Decisions {
				ds = append(ds, decision(d))
			}
		default:
			p := bindings.TokenBucketParams{Capacity: a.int(0), Rate: a.int(1), Period: a.ms(2), Now: instant(a.int(3)), Refill: bindings.TokenBucketRefill(a.str(4))}
			for i := 0; i < n; i++ {
				p.Requests = append(p.Requests, bindings.TokenBucketRequest{Cost: a.int(5 + 2*i), Deadline: instant(a.int(6 + 2*i))})
			}
			if !a.ok {
				return nil, ErrNotTyped
			}
			var r bindings.TokenBucketResult
			r, err = bindings.TokenBucket(ctx, c, keys, p)
			for _, d := range r.Decisions {
				ds = append(ds, decision(d))
			}
		}
		var ae *bindings.ArgError
		if errors.As(err, &ae) {
			return nil, ErrNotTyped
		}
		var out []any
		for _, d := range ds {
			out = append(out, d.Allowed, d.Remaining, d.RetryAfter.Milliseconds(), d.ResetAfter.Milliseconds())
		}
		return out, err
	}
}

// instant is a unix_us argument as the typed API takes it: 0 is the zero
// time.
func instant(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// ErrNotTyped is what a typed call returns for arguments the typed API
// cannot express (or refuses before sending): the step then goes raw.
var ErrNotTyped = errors.New("arguments the typed API cannot express")

// scriptErrorText is an error reply's text as the server sent it, also when
// the bindings turned it into a *bindings.ScriptError.
func scriptErrorText(err error) string {
	var se *bindings.ScriptError
	if errors.As(err, &se) {
		return se.Code + " " + se.Message
	}
	// Another client's bindings (see Reflected): their *ScriptError reads
	// "x.lua: CODE message" too.
	if _, text, ok := strings.Cut(err.Error(), ".lua: "); ok {
		return text
	}
	return err.Error()
}

// Typed makes one call of script through the typed API over c: the
// ratelimit package where it can say the call, else the generated
// bindings. It returns the reply as the script's integers, or ErrNotTyped
// where the typed API cannot express argv (or refuses it before sending).
func Typed(ctx context.Context, script string, c redis.Scripter, keys, argv []string) ([]any, error) {
	call := typed[script]
	if call == nil {
		return nil, fmt.Errorf("%s has no typed call listed in tests/tier/typed.go", script)
	}
	return call(ctx, c, keys, &rawArgs{vals: argv, ok: true})
}

// limiterClient is c as ratelimit takes it: every client the tiers run
// over is one, so one that is not fails the step.
func limiterClient(c redis.Scripter) (ratelimit.Client, error) {
	rc, ok := c.(ratelimit.Client)
	if !ok {
		return nil, fmt.Errorf("tier: %T is no ratelimit.Client (it has no Del)", c)
	}
	return rc, nil
}

// keptAsIs reports whether a limiter with prefix keeps tag's state at key:
// key is prefix + "{" + tag + "}" and the key builder leaves tag as it is
// (no '%', '{' or '}', at most 200 bytes; docs/limiters.md).
func keptAsIs(prefix, tag, key string) bool {
	return prefix+"{"+tag+"}" == key && !strings.ContainsAny(tag, "%{}") && len(tag) <= 200
}
