// Package multikey is a limiter's send stage across keys: while a script
// call is in flight to a Redis node (on a Cluster, to a slot), further calls
// of the same script for other keys wait, and go together as one call of the
// script's multi-key form (bindings.MultiKeyForm) when it returns. That form
// runs each call in turn exactly as a call of its own at that instant would
// run, so batching changes no answer; it saves a round trip and Redis's
// per-command work for every call but one. A script that takes the form's
// layout itself (bindings.MultiKeyItself: the fixed window, the sliding
// window counter and log, the leaky bucket) gets the batch without the
// form's wrapper, at less cost, with a key's calls together (runs.go).
// Calls of a script that takes many keys
// itself (gcra.lua, token_bucket.lua) under one limit go as one call of
// the script instead, which costs Redis less still (join.go). A
// call alone is sent at once, as it would be without this stage: no timer
// ever holds one.
//
// It sits below every script call a limiter makes (decisions, the per-key
// batches, settles, refunds; inflight's acquires, renews and releases),
// above the guard (one breaker verdict per batch). On a Cluster
// a batch's keys share a slot: Redis refuses an EVALSHA whose declared
// keys are of two slots (CROSSSLOT) whatever its flags say
// (allow-cross-slot-keys covers keys a script did not declare), and a
// slot's keys move together when it migrates, so a MOVED or ASK mid-batch
// redirects the whole call, which Redis refuses before running any of it
// (go-redis follows).
package multikey

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// maxCalls is the most calls one batch carries: the form's own bound.
const maxCalls = 64

// maxArgs bounds a batch's arguments, so that a batch of per-key batches
// (64 requests each) stays a bounded piece of Redis's time.
const maxArgs = 1024

// maxWork bounds the members a batch of sliding_window_log.lua calls may
// log or remove: what one call may at most (the log's bound), so that no
// batch holds Redis longer than the costliest call of its own could (64
// calls of 10 000 units in one batch held an idle Redis for 1.2 s; alone,
// each for at most 21 ms). Every other script's call has a small bound of
// its own, which maxArgs covers.
const maxWork = 10000

var slidingLog = bindings.SlidingWindowLogScript.Hash()

// work is what a call of the script hash logs or removes at most: for
// sliding_window_log.lua its cost (ARGV[3]), up to the log's bound.
func work(hash string, args []any) int64 {
	if hash != slidingLog || len(args) < 3 {
		return 0
	}
	cost, _ := args[2].(int64) // the bindings send integers as int64
	return min(max(cost, 0), maxWork)
}

const shards = 16

// Client is a guarded client whose script calls batch across keys. It
// passes on what the rest of the limiter asks of a client.
type Client struct {
	redis.Scripter // the guarded client: every call of this stage goes through it
	process        func(context.Context, redis.Cmder) error
	// down reports a key whose node's breaker is open (the guard's Down;
	// nil for a client without one): its calls go on their own and fail
	// at once, rather than wait behind a batch the node holds.
	down    func(key string) bool
	cluster bool // batch within a slot only
	seed    maphash.Seed
	shards  [shards]shard
}

type shard struct {
	mu sync.Mutex
	// lines has an entry for every group that has had a call: one per
	// script off a Cluster, one per script and slot on one.
	lines map[group]*line
	_     [40]byte
}

// group is the calls that may go in one batch: one script, one slot (-1
// off a Cluster).
type group struct {
	hash string
	slot int
}

// line is a group's calls: how many are in flight (1 to depth) and those
// waiting for one to return.
type line struct {
	busy    int
	last    time.Time // when a call of the group last returned, or its busy spell began
	waiting []*waiter
	// spare holds the slices of batches answered, for the batches to
	// come: a batch takes the waiting list's slice, or a copy of its
	// head, and gives it back when answered. A line keeps at most depth
	// of them, each cleared, so it holds no waiter.
	spare [][]*waiter
}

// stuck is how long a group may go without a call returning before the
// calls that come stop waiting for its batches and go as calls of their
// own, as without this stage: a node that hangs (a stopped process, a
// partition: go-redis reads on for its ReadTimeout) would otherwise hold
// every caller for its whole timeout, away from the guard, whose breaker
// fails them at once once it opens.
const stuck = 100 * time.Millisecond

// depth is how many calls of a group may be in flight at once: two, so
// that Redis runs one batch while the next gathers and travels (with one,
// Redis idles for every round trip).
const depth = 2

// waiter is a call waiting for its group's next batch. sent, left, the
// line, and the writing of cmd and the signal on done are guarded by the
// shard's mu; done is signalled once cmd holds the answer, unless the
// caller left.
type waiter struct {
	ctx  context.Context
	cmd  *redis.Cmd
	keys []any // strings, as the command holds them
	args []any
	work int64 // see work
	sent bool
	left bool          // its caller left after it was sent: nobody reads cmd
	done chan struct{} // one slot: signalled, never closed, so it is reused
}

// waiters keeps waiters, each with its channel, for the calls that wait
// next: a waiter and its channel were two thirds of what a batched call
// allocated here. A waiter goes back only when nothing else holds it: its
// answer was read, or it left the line unsent. One whose caller left after
// it was sent stays with its batch and is collected.
var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan struct{}, 1)} }}

// answered signals w's caller that its cmd holds the answer.
func (w *waiter) answered() { w.done <- struct{}{} }

// free puts w back in waiters; nothing may hold it.
func (w *waiter) free() {
	done := w.done
	*w = waiter{done: done}
	waiters.Put(w)
}

// Wrap returns c, the guarded client over user, with its script calls
// batched across keys, when user is a client whose node Wrap can tell (a
// *redis.Client, Sentinel's included, a *redis.ClusterClient, or a client
// with a Cluster method, as the rueidis and valkey-go scripters have); any
// other (a Ring, an AutoPipeliner) is returned as is.
func Wrap(c, user redis.Scripter) redis.Scripter {
	p, ok := c.(interface {
		Process(context.Context, redis.Cmder) error
	})
	if !ok {
		return c
	}
	m := &Client{Scripter: c, process: p.Process, seed: maphash.MakeSeed()}
	if d, ok := c.(interface{ Down(key string) bool }); ok {
		m.down = d.Down
	}
	switch u := user.(type) {
	case *redis.Client:
	case *redis.ClusterClient:
		m.cluster = true
	case interface{ Cluster() bool }: // the rueidis and valkey-go scripters
		m.cluster = u.Cluster()
	default:
		return c
	}
	for i := range m.shards {
		m.shards[i].lines = map[group]*line{}
	}
	return m
}

// Unwrap returns the client Wrap wrapped.
func Unwrap(c redis.Scripter) redis.Scripter {
	if m, ok := c.(*Client); ok {
		return m.Scripter
	}
	return c
}

// Process sends cmd; an EVALSHA of a script with a multi-key form goes
// through its group's line. (The bindings send EVALSHA this way.)
func (m *Client) Process(ctx context.Context, cmd redis.Cmder) error {
	c, ok := cmd.(*redis.Cmd)
	if !ok {
		return m.process(ctx, cmd)
	}
	args := c.Args()
	if len(args) < 3 || args[0] != "evalsha" {
		return m.process(ctx, cmd)
	}
	hash, _ := args[1].(string)
	nk, ok := args[2].(int)
	if !ok || nk < 0 || 3+nk > len(args) || bindings.MultiKeyForm(hash) == nil {
		return m.process(ctx, cmd)
	}
	for i := 3; i < 3+nk; i++ {
		if _, ok := args[i].(string); !ok {
			return m.process(ctx, cmd)
		}
	}
	first := ""
	if nk > 0 {
		first = args[3].(string)
	}
	g := m.group(hash, first)
	// A lone call allocates nothing here.
	if _, own := m.enter(ctx, g, first, c, args[3:3+nk], nil, args[3+nk:]); own {
		err := m.process(ctx, cmd)
		m.next(g, nil)
		return err
	}
	return c.Err()
}

// EvalSha is the bindings' call when its arguments do not fit their buffer
// (a per-key batch): the same line as Process.
func (m *Client) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if bindings.MultiKeyForm(sha1) == nil {
		return m.Scripter.EvalSha(ctx, sha1, keys, args...)
	}
	first := ""
	if len(keys) > 0 {
		first = keys[0]
	}
	g := m.group(sha1, first)
	// A lone call allocates nothing here either: its keys are boxed, and
	// the command for its answer made, only if it waits.
	if c, own := m.enter(ctx, g, first, nil, nil, keys, args); !own {
		return c
	}
	c := m.Scripter.EvalSha(ctx, sha1, keys, args...)
	m.next(g, nil)
	return c
}

// group is the group of a call whose first key is first ("" for none): its
// keys share that key's slot, or the call fails on a Cluster whether
// batched or not.
func (m *Client) group(hash, first string) group {
	g := group{hash: hash, slot: -1}
	if m.cluster && first != "" {
		g.slot = slot(first)
	}
	return g
}

func (m *Client) shard(g group) *shard {
	return &m.shards[(maphash.String(m.seed, g.hash)+uint64(g.slot))%shards]
}

// enter reports whether the call may go at once (fewer than depth of its
// group are in flight, or the group is stuck, or the node of first, its
// first key, is down), and then the caller sends it itself and calls next
// once it returns.
// Otherwise it waits for a batch and returns c with its answer (a new
// command if c is nil). The call's keys are keys, or else skeys, boxed
// only if it waits.
func (m *Client) enter(ctx context.Context, g group, first string, c *redis.Cmd, keys []any, skeys []string, args []any) (_ *redis.Cmd, own bool) {
	sh := m.shard(g)
	sh.mu.Lock()
	ln := sh.lines[g]
	if ln == nil {
		ln = &line{}
		sh.lines[g] = ln
	}
	if ln.busy == 0 {
		ln.last = time.Now() // a busy spell begins
	}
	if ln.busy < depth || time.Since(ln.last) > stuck || m.down != nil && m.down(first) {
		ln.busy++
		sh.mu.Unlock()
		return c, true
	}
	if c == nil {
		c = redis.NewCmd(ctx)
	}
	if keys == nil && len(skeys) > 0 {
		keys = make([]any, len(skeys))
		for i, k := range skeys {
			keys[i] = k
		}
	}
	w := waiters.Get().(*waiter)
	w.ctx, w.cmd, w.keys, w.args, w.work = ctx, c, keys, args, work(g.hash, args)
	ln.waiting = append(ln.waiting, w)
	sh.mu.Unlock()
	select {
	case <-w.done:
		w.free()
		return c, false
	case <-ctx.Done():
	}
	sh.mu.Lock()
	select {
	case <-w.done: // the answer came as the wait ended: keep it
		sh.mu.Unlock()
		w.free()
		return c, false
	default:
	}
	if w.sent {
		// Its batch is on the wire: the caller leaves at its deadline,
		// as it would leave a call of its own (ratelimit's send stage
		// reads such a call on, under a context that ends later). Its
		// batch still holds w: it is not freed.
		w.left = true
		sh.mu.Unlock()
		c.SetErr(ctx.Err())
		return c, false
	}
	for i, o := range ln.waiting {
		if o == w {
			ln.waiting = append(ln.waiting[:i], ln.waiting[i+1:]...)
			break
		}
	}
	sh.mu.Unlock()
	w.free()
	c.SetErr(ctx.Err()) // never sent: it counted nothing
	return c, false
}

// next hands g's call that just returned on to the calls that came
// meanwhile: their batch goes out on a goroutine of its own, in its place.
// done is the slice of the batch that returned (nil for a call of its
// own), kept for a batch to come.
func (m *Client) next(g group, done []*waiter) {
	sh := m.shard(g)
	sh.mu.Lock()
	ln := sh.lines[g]
	ln.last = time.Now()
	if done != nil && len(ln.spare) < depth {
		clear(done)
		ln.spare = append(ln.spare, done[:0])
	}
	if len(ln.waiting) == 0 {
		ln.busy-- // the line stays: at most one per script and slot
		sh.mu.Unlock()
		return
	}
	n, args, units := len(ln.waiting), 0, int64(0)
	for i, w := range ln.waiting {
		args += 2 + len(w.args)
		units += w.work
		if i == maxCalls || i > 0 && (args > maxArgs || units > maxWork) {
			n = i
			break
		}
	}
	var spare []*waiter
	if k := len(ln.spare); k > 0 {
		spare, ln.spare = ln.spare[k-1], ln.spare[:k-1]
	}
	var batch []*waiter
	if n == len(ln.waiting) { // the common case: every call waiting goes
		batch, ln.waiting = ln.waiting, spare
	} else {
		batch = append(spare, ln.waiting[:n]...)
		rest := ln.waiting[n:]
		ln.waiting = append(ln.waiting[:0], rest...)
		clear(ln.waiting[len(ln.waiting):cap(ln.waiting)])
	}
	for _, w := range batch {
		w.sent = true
	}
	sh.mu.Unlock()
	go m.flush(g, batch)
}

// flush sends one batch and answers each of its calls, under detach's
// context. A batch Redis refused before running it goes call by call.
// The batch's last piece goes on this goroutine, any other on one of its
// own, at once.
func (m *Client) flush(g group, batch []*waiter) {
	ctx, cancel := detach(batch...)
	joined, rest := join(m.seed, g.hash, batch)
	var wg *sync.WaitGroup // made only for a batch of several pieces
	for i, calls := range joined {
		if i == len(joined)-1 && len(rest) == 0 {
			m.joined(ctx, g, calls)
			break
		}
		if wg == nil {
			wg = new(sync.WaitGroup)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.joined(ctx, g, calls)
		}()
	}
	switch len(rest) {
	case 0:
	case 1: // a call of its own costs less than the form
		w := rest[0]
		m.answer(g, w, m.evalSha(ctx, g.hash, w.keys, w.args))
	default:
		m.form(ctx, g, rest)
	}
	if wg != nil {
		wg.Wait()
	}
	cancel()
	m.next(g, batch)
}

// form sends calls as one call of their script's multi-key form, or of
// the script itself when it takes that form's layout (fixed_window.lua).
func (m *Client) form(ctx context.Context, g group, batch []*waiter) {
	// One slice is the command: EVALSHA, the form's hash, the keys, then
	// each call's counts and arguments.
	n, nkeys := 3, 0
	for _, w := range batch {
		n += 2 + len(w.keys) + len(w.args)
		nkeys += len(w.keys)
	}
	form := bindings.MultiKeyForm(g.hash)
	if s := bindings.MultiKeyItself(g.hash); s != nil && nkeys >= 2 {
		form = s // the same layout and replies, at less cost to Redis
		runs(m.seed, batch)
	}
	argv := make([]any, 3, n)
	argv[0], argv[1], argv[2] = "evalsha", form.Hash(), nkeys
	for _, w := range batch {
		argv = append(argv, w.keys...)
	}
	for _, w := range batch {
		argv = append(argv, len(w.keys), len(w.args))
		argv = append(argv, w.args...)
	}
	replies, err := m.sendLoaded(ctx, form, argv).Slice()
	if notRun(err) {
		m.alone(g, batch)
		return
	}
	m.deliver(g, batch, func(i int) (any, error) {
		switch {
		case err != nil:
			return nil, err
		case i >= len(replies):
			return nil, fmt.Errorf("multikey: %d replies for %d calls", len(replies), len(batch))
		}
		switch v := replies[i].(type) {
		case error:
			return nil, v
		case nil:
			return nil, redis.Nil
		default:
			return v, nil
		}
	})
}

// sendLoaded sends argv, an EVALSHA of script, and again once it loaded
// script where the keys live when the server lacks it (a restart, SCRIPT
// FLUSH): a NOSCRIPT call did not run.
func (m *Client) sendLoaded(ctx context.Context, script *redis.Script, argv []any) *redis.Cmd {
	cmd := m.send(ctx, argv)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, m.Scripter).Err(); err == nil {
			cmd = m.send(ctx, argv)
		}
	}
	return cmd
}

// deliver gives each call of a batch its answer, answer(i) for the i-th,
// unless its caller left.
func (m *Client) deliver(g group, batch []*waiter, answer func(i int) (any, error)) {
	sh := m.shard(g)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, w := range batch {
		if w.left {
			continue
		}
		if v, err := answer(i); err != nil {
			w.cmd.SetErr(err)
		} else {
			w.cmd.SetVal(v)
		}
		w.answered()
	}
}

// notRun reports an error by which Redis refused a batch before running
// any of it, and would run its calls one by one: a slot migrating, whose
// keys are not all on one node yet (TRYAGAIN, or an ASK or MOVED that
// go-redis's redirects did not resolve), or keys of several slots.
func notRun(err error) bool {
	for _, p := range [...]string{"TRYAGAIN", "ASK", "MOVED", "CROSSSLOT"} {
		if err != nil && redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// alone sends each call of a batch Redis did not run as a call of its
// own, at once, as it would have gone without this stage.
func (m *Client) alone(g group, batch []*waiter) {
	var wg sync.WaitGroup
	for _, w := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := detach(w)
			defer cancel()
			m.answer(g, w, m.evalSha(ctx, g.hash, w.keys, w.args))
		}()
	}
	wg.Wait()
}

// detach is a context for a batch's call: the first caller's values,
// without its cancellation (one caller leaving must not fail the others'
// calls), until the latest of the callers' deadlines, or none if one has
// none.
func detach(batch ...*waiter) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, w := range batch {
		d, ok := w.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(batch[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(batch[0].ctx), latest)
}

// evalSha sends one call of the script hash as a command of its own.
func (m *Client) evalSha(ctx context.Context, hash string, keys, args []any) *redis.Cmd {
	argv := make([]any, 0, 3+len(keys)+len(args))
	argv = append(argv, "evalsha", hash, len(keys))
	argv = append(append(argv, keys...), args...)
	return m.send(ctx, argv)
}

// send sends argv, an EVALSHA, through the guarded client.
func (m *Client) send(ctx context.Context, argv []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3) // as go-redis's EvalSha does, for routing
	_ = m.process(ctx, cmd)
	return cmd
}

// answer copies a call's own answer into w's command, unless its caller
// left.
func (m *Client) answer(g group, w *waiter, c *redis.Cmd) {
	one := [1]*waiter{w}
	m.deliver(g, one[:], func(int) (any, error) { return c.Val(), c.Err() })
}

// Pipeline passes on the guarded client's (All's batches).
func (m *Client) Pipeline() redis.Pipeliner {
	return m.Scripter.(interface{ Pipeline() redis.Pipeliner }).Pipeline()
}

// Del passes on the guarded client's (Reset).
func (m *Client) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return m.Scripter.(interface {
		Del(context.Context, ...string) *redis.IntCmd
	}).Del(ctx, keys...)
}
