package multikey

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// A script that decides many keys in one call of its own (gcra.lua and
// token_bucket.lua: 2 to 64 distinct keys, one request each, under one
// limit) needs no form for the calls that fit that shape: such calls with
// the same limit join into one call of the script, which reads the limit
// and the server's clock once and runs no driver, so a decision there
// costs Redis less than half what it costs in the form
// (docs/performance.md). shape is what the script's header says of it: its
// arguments before the requests, each request's, each decision's reply.
type shape struct {
	script                *redis.Script
	fixed, request, reply int
}

var shapes = map[string]shape{
	bindings.GCRAScript.Hash():        {script: bindings.GCRAScript, fixed: 5, request: 2, reply: 4},
	bindings.TokenBucketScript.Hash(): {script: bindings.TokenBucketScript, fixed: 5, request: 2, reply: 4},
}

// join splits batch into the groups of calls that go as one call of
// their script, in the order they came (two or more calls each: one key,
// one request, the same limit, distinct keys), and the rest.
func join(seed maphash.Seed, hash string, batch []*waiter) (joined [][]*waiter, rest []*waiter) {
	sh, ok := shapes[hash]
	if !ok {
		return nil, batch
	}
	if one(seed, sh, batch) {
		return [][]*waiter{batch}, nil // the common batch: nothing more to make
	}
	// rest is made only for a call that goes there; a group, as large as
	// what is left of batch for the first (usually the only one: one
	// limit), growing as it needs for the others. A group is searched for
	// a call's key only when a call that could join named it before.
	var keys keyIndex
next:
	for n, w := range batch {
		if len(w.keys) != 1 || len(w.args) != sh.fixed+sh.request || !plain(w.args) {
			rest = append(rest, w)
			continue
		}
		k, ok := w.keys[0].(string)
		again := !ok || len(batch) > maxCalls || keys.first(seed, batch, n, k) != n
		for i, j := range joined {
			if !slices.Equal(j[0].args[:sh.fixed], w.args[:sh.fixed]) {
				continue
			}
			if len(j) == maxCalls || again && slices.ContainsFunc(j, func(o *waiter) bool { return o.keys[0] == w.keys[0] }) {
				// A key twice: the second goes in the form, after or
				// before, as two calls at once may run either way.
				rest = append(rest, w)
				continue next
			}
			joined[i] = append(j, w)
			continue next
		}
		if joined == nil {
			joined = append(joined, append(make([]*waiter, 0, min(len(batch)-n, maxCalls)), w))
			continue
		}
		joined = append(joined, []*waiter{w})
	}
	// A group of one goes with the rest.
	kept := joined[:0]
	for _, j := range joined {
		if len(j) == 1 {
			rest = append(rest, j[0])
			continue
		}
		kept = append(kept, j)
	}
	return kept, rest
}

// one reports whether every call of batch joins one group: two or more
// calls, each of one key and one request, all of one limit, on distinct
// keys.
func one(seed maphash.Seed, sh shape, batch []*waiter) bool {
	if len(batch) < 2 || len(batch) > maxCalls {
		return false
	}
	var keys keyIndex
	limit := batch[0].args
	for i, w := range batch {
		if len(w.keys) != 1 || len(w.args) != sh.fixed+sh.request || !plain(w.args) ||
			!slices.Equal(w.args[:sh.fixed], limit[:sh.fixed]) {
			return false
		}
		k, ok := w.keys[0].(string)
		if !ok || keys.first(seed, batch, i, k) != i {
			return false
		}
	}
	return true
}

// plain reports whether every argument compares with == (the bindings
// send strings and integers).
func plain(args []any) bool {
	for _, a := range args {
		switch a.(type) {
		case string, int64, int:
		default:
			return false
		}
	}
	return true
}

// joined sends calls, all of one limit on distinct keys, as one call of
// their script: its limit, then each call's key and request in turn. The
// script reads every key before it writes any, so an error reply (a key of
// another type, another script's state) has changed nothing: the calls
// then go one by one, each to its own answer.
func (m *Client) joined(ctx context.Context, g group, calls []*waiter) {
	sh := shapes[g.hash]
	argv := make([]any, 3, 3+len(calls)*(1+sh.request)+sh.fixed)
	argv[0], argv[1], argv[2] = "evalsha", g.hash, len(calls)
	for _, w := range calls {
		argv = append(argv, w.keys[0])
	}
	argv = append(argv, calls[0].args[:sh.fixed]...)
	for _, w := range calls {
		argv = append(argv, w.args[sh.fixed:]...)
	}
	replies, err := m.sendLoaded(ctx, sh.script, argv).Slice()
	if notRun(err) || refused(err) {
		m.alone(g, calls)
		return
	}
	m.deliver(g, calls, func(i int) (any, error) {
		switch {
		case err != nil:
			return nil, err
		case len(replies) != len(calls)*sh.reply:
			return nil, fmt.Errorf("multikey: %d replies for %d calls of %d", len(replies), len(calls), sh.reply)
		}
		return replies[i*sh.reply : (i+1)*sh.reply : (i+1)*sh.reply], nil
	})
}

// refused reports an error reply by which a joined call changed nothing
// and which may be one call's alone (a key of another type, another
// script's state, a bad argument): its calls then go one by one, so each
// gets its own answer.
func refused(err error) bool {
	for _, p := range [...]string{"WRONGTYPE", "BADSTATE", "BADARG"} {
		if err != nil && redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
