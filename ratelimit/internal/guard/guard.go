// Package guard is what a limiter does while a Redis node is down, and how
// it notices the node is back or replaced (docs/operations.md).
//
// go-redis alone spends 100-150 ms in retries and backoff on every call to
// a dead node; a ClusterClient reloads its slot map only on
// MOVED/ASK/READONLY or when the map is 10 s old, which a crashed master
// never causes; and once PoolSize dials have failed, a client's pool
// answers every dial with the last error until its own redial, once a
// second, succeeds. So ratelimit.New and inflight.New wrap a
// *redis.Client or *redis.ClusterClient, or a bindings.FunctionsClient
// over one, in a guard with a breaker per node address: the first call
// that finds a node unreachable opens its breaker, and so does a
// limiter's timeout when the node has answered no call since the one it
// ended was sent (Unanswered: a hung node, which no error tells; any
// answer closes that breaker again). Calls whose key lives there then
// fail at once while one probe at a time, every probeEvery, asks the node
// about the key (and, on a cluster, asks for the slot map again). Calls on
// other nodes never wait. Once the node answers, calls go to it again,
// through a client of the guard's own while the pool cannot dial yet; once
// the slot map names another master, calls go there. With every breaker
// closed the guard costs an atomic load per call and a clock read per
// answer (and, on a cluster, a look at the slot map). A Ring and go-redis's
// AutoPipeliner are not guarded: go-redis cannot say which node serves a
// key there.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

const (
	// probeEvery is how often an open breaker lets a probe through; it
	// bounds how long decisions stay off Redis after the node is back. Most
	// outages are blips (a restart, a failover), and a blip should cost
	// tens of milliseconds; a probe of a node that is down costs one
	// refused dial (or, on a host that does not answer, one probe waiting
	// probeTimeout: they go one at a time).
	probeEvery = 25 * time.Millisecond
	// mainPingWait bounds the PING that asks whether the user's client
	// dials the node again. Its pool answers at once with its last dial
	// error while it cannot, and go-redis would spend its retries' backoff
	// (up to 512 ms) on that answer before the probe could let calls
	// through the guard's own client.
	mainPingWait = 20 * time.Millisecond
	// probeTimeout bounds one probe's round trip.
	probeTimeout = 500 * time.Millisecond
	// forgetAfter drops a breaker no call has met for this long: the
	// node left the slot map (a replaced master) or nobody needs it.
	forgetAfter = 2 * time.Second
	// readOnlyWait bounds how long a call that met READONLY (a master
	// demoted under a ReadOnly, RouteByLatency or RouteRandomly client)
	// is sent again while the slot map moves to the new master.
	readOnlyWait = time.Second
)

// guard holds the breakers of one limiter's client.
type guard struct {
	client  *redis.Client        // a single node, or
	cluster *redis.ClusterClient // a cluster
	nopen   atomic.Int32         // len(open), read without mu on every call
	mu      sync.Mutex
	open    map[string]*breaker // by node address
	nodes   sync.Map            // *redis.Client -> *fnNode, for the Functions library
	// heard is when the node last answered a call (unix ns): heardAt for a
	// single node, heardBy (address -> *atomic.Int64) on a cluster.
	heardAt atomic.Int64
	heardBy sync.Map
}

type breaker struct {
	err      error     // what the last call or probe met
	probeAt  time.Time // no probe before
	probing  bool
	lastCall time.Time
	// via reaches the node, once it answers again, while the client's own
	// pool to it cannot dial yet (its redial comes once a second): calls
	// go through it instead of failing.
	via *redis.Client
	// hung: opened because the node answered nothing for a timeout
	// (unanswered), not for an error; any answer of the node closes it.
	hung bool
}

// nodeDownError is what a call meets while its node's breaker is open.
type nodeDownError struct {
	addr string
	err  error
}

func (e *nodeDownError) Error() string {
	return fmt.Sprintf("redis node %s is unreachable (%v); calls on it fail fast until a probe reaches it", e.addr, e.err)
}

func (e *nodeDownError) Unwrap() error { return e.err }

// NotSent reports an error of a call the guard failed at once, its node's
// breaker open: the call never left this process, so it changed nothing.
func NotSent(err error) bool {
	var nd *nodeDownError
	return errors.As(err, &nd)
}

// node returns the address of the node that serves key, and that node's
// client (for probes).
func (g *guard) node(ctx context.Context, key string) (string, *redis.Client) {
	if g.client != nil {
		return g.client.Options().Addr, g.client
	}
	c, err := g.cluster.MasterForKey(ctx, key)
	if err != nil {
		return "", nil
	}
	return c.Options().Addr, c
}

// before returns the address of key's node, as the slot map says before
// the call (after may run once the map has moved on), and the client to
// send through instead of the user's (nil for the user's): it fails the
// call at once when that node's breaker is open, starting a probe when one
// is due.
func (g *guard) before(ctx context.Context, key string) (string, *redis.Client, error) {
	if key == "" {
		return "", nil, nil
	}
	addr, c := g.node(ctx, key)
	if g.nopen.Load() == 0 {
		return addr, nil, nil
	}
	return g.beforeNode(ctx, addr, c, key)
}

// beforeNode is before for the node at addr, whose client is c; key is
// what a probe asks about ("" for PING).
func (g *guard) beforeNode(ctx context.Context, addr string, c *redis.Client, key string) (string, *redis.Client, error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for a, b := range g.open {
		if a != addr && now.Sub(b.lastCall) > forgetAfter {
			g.forget(a)
		}
	}
	b := g.open[addr]
	if b == nil {
		return addr, nil, nil
	}
	b.lastCall = now
	if !b.probing && !now.Before(b.probeAt) && c != nil {
		b.probing = true
		go g.probe(addr, c, key)
	}
	if b.via != nil {
		return addr, b.via, nil
	}
	if g.cluster != nil {
		// Costs a compare-and-swap: go-redis runs one reload at a time,
		// and none for 200 ms after the last.
		g.cluster.ReloadState(ctx)
	}
	return addr, nil, &nodeDownError{addr: addr, err: b.err}
}

// after opens the breaker of addr, the node a call went to (through via,
// or the user's client when nil), when the call failed for want of the
// node.
//
// A call whose caller's context ended says nothing of the node: a dial or
// a read cut short by a caller's deadline fails as a dead node's would,
// and must not fail the other callers fast (call.Ended; the limiter's own
// timeout, WithTimeout, is the node's failure to answer in time).
func (g *guard) after(ctx context.Context, addr string, via *redis.Client, err error) {
	if addr != "" && replied(err) {
		g.heard(addr)
		if g.nopen.Load() > 0 {
			g.mu.Lock()
			if b := g.open[addr]; b != nil && b.hung {
				g.forget(addr) // it answers after all: a slow node, or one resumed
			}
			g.mu.Unlock()
		}
	}
	if err == nil || addr == "" || call.Ended(ctx) || !nodeFailed(err) {
		return
	}
	now := time.Now()
	g.mu.Lock()
	switch b := g.open[addr]; {
	case b == nil:
		g.open[addr] = &breaker{err: err, probeAt: now.Add(probeEvery), lastCall: now}
		g.nopen.Store(int32(len(g.open)))
	case via != nil && b.via == via: // down again
		retire(b.via)
		b.via, b.err, b.probeAt = nil, err, now.Add(probeEvery)
	}
	g.mu.Unlock()
	if g.cluster != nil {
		g.cluster.ReloadState(ctx)
	}
}

// replied reports an error that is a reply of the node's own (or none):
// unlike answered, a context's end is not one.
func replied(err error) bool {
	var rerr redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &rerr)
}

// heard notes that the node at addr answered a call now.
func (g *guard) heard(addr string) {
	now := time.Now().UnixNano()
	if g.cluster == nil {
		g.heardAt.Store(now)
		return
	}
	t, ok := g.heardBy.Load(addr)
	if !ok {
		t, _ = g.heardBy.LoadOrStore(addr, new(atomic.Int64))
	}
	t.(*atomic.Int64).Store(now)
}

// heardSince reports whether the node at addr answered a call at or after
// since.
func (g *guard) heardSince(addr string, since time.Time) bool {
	at := g.heardAt.Load()
	if g.cluster != nil {
		t, ok := g.heardBy.Load(addr)
		if !ok {
			return false
		}
		at = t.(*atomic.Int64).Load()
	}
	return at >= since.UnixNano()
}

// unanswered opens the breaker of key's node when a call on key, sent at
// since, went unanswered for its limiter's whole timeout d and the node
// has answered no call since then: it hangs (a stopped process, a
// partition, a host that vanished), which no error tells, since go-redis
// reads on past a caller's deadline until its ReadTimeout (3 s by
// default). Later calls then fall back at once, not each after its own
// timeout, and a probe every probeEvery finds the node when it answers
// again. A node that answered other calls meanwhile is slow or busy, not
// down, and a caller's own deadline is never the node's failure (the
// limiter asks only when its timeout, not the caller, ended the wait).
func (g *guard) unanswered(key string, since time.Time, d time.Duration) {
	addr, _ := g.node(context.Background(), key)
	if addr == "" || g.heardSince(addr, since) {
		return
	}
	now := time.Now()
	g.mu.Lock()
	if g.open[addr] == nil && !g.heardSince(addr, since) {
		err := fmt.Errorf("no answer within %v, and none to any call since %s", d, since.Format("15:04:05.000"))
		g.open[addr] = &breaker{err: err, probeAt: now.Add(probeEvery), lastCall: now, hung: true}
		g.nopen.Store(int32(len(g.open)))
	}
	g.mu.Unlock()
}

// down reports whether the breaker of key's node is open (with no client
// of the guard's own to reach it): a call on key now fails at once.
func (g *guard) down(key string) bool {
	if g.nopen.Load() == 0 {
		return false
	}
	addr, _ := g.node(context.Background(), key)
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.open[addr]
	return b != nil && b.via == nil
}

// Down reports whether a call on key through c, a client Wrap returned,
// would fail at once, its node's breaker open; false for other clients.
func Down(c redis.Scripter, key string) bool {
	g := guardOf(c)
	return g != nil && g.down(key)
}

// guardOf is the guard of c, a client Wrap returned; nil for others.
func guardOf(c redis.Scripter) *guard {
	switch c := c.(type) {
	case *guarded:
		return c.g
	case *functions:
		return c.g
	}
	return nil
}

// Unanswered is told of every call on key that a limiter with the timeout
// d sent through c, a client Wrap returned, at since, under the caller's
// ctx, and ended with err. When the timeout, not the caller, ended it (an
// error, d past, the caller still waiting), the guard opens the node's
// breaker if the node answered nothing meanwhile (see guard.unanswered).
// Other clients are left as they are.
func Unanswered(ctx context.Context, c redis.Scripter, key string, since time.Time, d time.Duration, err error) {
	if err == nil || d <= 0 || time.Since(since) < d || call.Ended(ctx) {
		return
	}
	switch g := guardOf(c); {
	case g == nil:
	case g.cluster != nil:
		go g.unanswered(key, since, d) // the slot map may be asked for
	default:
		g.unanswered(key, since, d)
	}
}

// probe asks the node about key with a short timeout: any answer but a
// failure means it is back. Then the user's client is asked too: when it
// answers, the breaker closes; until then calls go through a client of
// the guard's own. On a cluster the probe also asks for the slot map, so
// a promoted replica is found within probeEvery of the reload.
func (g *guard) probe(addr string, c *redis.Client, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	g.mu.Lock()
	b := g.open[addr]
	back := b != nil && b.via != nil
	g.mu.Unlock()
	var err error
	if !back {
		if g.cluster != nil {
			g.cluster.ReloadState(ctx)
		}
		// A client of its own, not the user's: its pool may answer with
		// its last dial error for up to a second after the node is back.
		// (PoolSize 2: its one dial failing then starts no redial of its
		// own.)
		pc := redis.NewClient(probeOptions(c.Options()))
		if key != "" {
			err = pc.Exists(ctx, key).Err()
		} else {
			err = pc.Ping(ctx).Err()
		}
		pc.Close()
	}
	var mainErr error
	if answered(err) {
		mctx, mcancel := context.WithTimeout(ctx, mainPingWait)
		mainErr = c.Ping(mctx).Err()
		mcancel()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if b = g.open[addr]; b == nil {
		return
	}
	switch {
	case !answered(err):
		b.err = err
	case answered(mainErr):
		g.forget(addr)
		return
	case b.via == nil:
		o := *c.Options()
		o.MinIdleConns = 0
		b.via = redis.NewClient(&o)
	}
	b.probing, b.probeAt = false, time.Now().Add(probeEvery)
}

// borrowedDial reports a dial error that is another caller's: go-redis's
// pool, once PoolSize dials have failed, answers every dial with the last
// one's error until a redial of its own gets through, and a dial cut short
// by an impatient caller's context is such an error. A dial that timed out
// or was cancelled, sooner than the client's DialTimeout and with this
// call's context live, was not this call's: the node may well be healthy,
// and nothing was sent, so the call may be sent again.
func (g *guard) borrowedDial(ctx context.Context, took time.Duration, err error) bool {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "dial" || ctx.Err() != nil {
		return false
	}
	if !op.Timeout() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return took < g.dialTimeout()
}

func (g *guard) dialTimeout() time.Duration {
	if g.client != nil {
		return g.client.Options().DialTimeout
	}
	return g.cluster.Options().DialTimeout
}

// redial sends again, after a short pause, a call whose dial error was
// another caller's (borrowedDial): the pool's own redial runs at once and
// takes a round trip on a healthy node. It gives up after about 30 ms, or
// when ctx ends, and returns the last error.
func (g *guard) redial(ctx context.Context, took time.Duration, err error, call func() error) error {
	pause := time.Millisecond
	for i := 0; i < 5 && g.borrowedDial(ctx, took, err); i++ {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause *= 2
		start := time.Now()
		err = call()
		took = time.Since(start)
	}
	return err
}

// answered reports an error that is no failure of the node: the node
// answered (nil, or a reply of its own).
func answered(err error) bool {
	return err == nil || !nodeFailed(err) && !errors.Is(err, context.DeadlineExceeded)
}

// probeOptions is a probe's client: one try, short timeouts.
func probeOptions(o *redis.Options) *redis.Options {
	p := *o
	p.PoolSize, p.MinIdleConns, p.MaxIdleConns, p.MaxRetries = 2, 0, 0, -1
	p.ReadTimeout, p.WriteTimeout, p.DialTimeout = probeTimeout, probeTimeout, probeTimeout
	return &p
}

// forget closes addr's breaker; g.mu is held.
func (g *guard) forget(addr string) {
	if b := g.open[addr]; b != nil && b.via != nil {
		retire(b.via)
	}
	delete(g.open, addr)
	g.nopen.Store(int32(len(g.open)))
}

// viaLinger is how long a via is kept once no call is given it: calls
// that took it before may still be using it.
const viaLinger = 10 * time.Second

func retire(via *redis.Client) {
	time.AfterFunc(viaLinger, func() { via.Close() })
}

// nodeFailed reports an error that says the node cannot serve: the
// network (refused, reset, closed, timed out: *net.OpError, EOF) or the
// node's own refusal to serve any key now (LOADING, MASTERDOWN,
// CLUSTERDOWN). A script's answer, a pool timeout (this process is short
// of connections, not the node of answers) and the caller's context are
// not.
func nodeFailed(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// A read past its deadline, which go-redis may return bare ("i/o
	// timeout"): the node did not answer in time.
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		s := rerr.Error()
		return strings.HasPrefix(s, "LOADING ") || strings.HasPrefix(s, "MASTERDOWN ") || strings.HasPrefix(s, "CLUSTERDOWN ")
	}
	return false
}

// readOnly reports a READONLY reply: the node is a replica now, and the
// call changed nothing there (a replica refuses every write).
func readOnly(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "READONLY")
}

// retryReadOnly sends again a call that met READONLY on a cluster, every
// 10 ms while it keeps meeting it, asking for the slot map each time, for
// at most readOnlyWait (or until ctx ends): once the map names the new
// master the call goes there. It returns the last error.
func (g *guard) retryReadOnly(ctx context.Context, err error, call func() error) error {
	if g.cluster == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readOnlyWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for readOnly(err) {
		g.cluster.ReloadState(ctx)
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
		err = call()
	}
	return err
}

// do runs one call whose first key is key through the guard: call sends
// it through via, or the user's client when via is nil.
func (g *guard) do(ctx context.Context, key string, call func(via *redis.Client) error) error {
	addr, via, err := g.before(ctx, key)
	if err != nil {
		return err
	}
	start := time.Now()
	err = call(via)
	if err != nil {
		err = g.redial(ctx, time.Since(start), err, func() error { return call(via) })
	}
	if via != nil && redirected(err) {
		err = call(nil) // the slot moved: the user's client follows it
	}
	if readOnly(err) {
		err = g.retryReadOnly(ctx, err, func() error { return call(via) })
	}
	g.after(ctx, addr, via, err)
	return err
}

// doNode runs call, a command for the node at addr whose client is c
// (keyless, so not found by the slot map), through the guard: call sends
// it through the client it is given.
func (g *guard) doNode(ctx context.Context, addr string, c *redis.Client, call func(*redis.Client) error) error {
	via := (*redis.Client)(nil)
	if g.nopen.Load() > 0 {
		var err error
		if _, via, err = g.beforeNode(ctx, addr, c, ""); err != nil {
			return err
		}
	}
	send := c
	if via != nil {
		send = via
	}
	err := call(send)
	g.after(ctx, addr, via, err)
	return err
}

// redirected reports a cluster's MOVED or ASK: the node serves the slot no
// longer, and a call the guard sent it through its own client is sent
// again through the user's.
func redirected(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"))
}

// firstKey returns the first key of an EVAL, EVALSHA, FCALL or their _RO
// forms: name, script or function, numkeys, keys...
func firstKey(args []interface{}) string {
	if len(args) < 4 {
		return ""
	}
	if n, ok := args[2].(int); !ok || n < 1 {
		return ""
	}
	k, _ := args[3].(string)
	return k
}
