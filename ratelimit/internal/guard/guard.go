// Package guard is what a limiter does while a Redis node is down, and how
// it notices the node is back or replaced.
//
// go-redis alone spends 100-150 ms in retries and backoff on every call to
// a dead node, and a ClusterClient reloads its slot map only on
// MOVED/ASK/READONLY or when the map is 10 s old, which a crashed master
// never causes: after its replica is promoted, calls kept going to the dead
// address for up to 10 s more (PITFALLS). So ratelimit.New and
// inflight.New wrap a *redis.Client or *redis.ClusterClient in a guard with a breaker per node address: the
// first call that finds a node unreachable opens its breaker, and from then
// on calls whose key lives on that node fail at once (the failure policy
// decides them in microseconds) while one probe at a time, every
// probeEvery, asks the node about the key (and, on a cluster, asks for the
// slot map again). Calls on other nodes never wait. Once the node answers,
// or the slot map names another master for the key, calls go to Redis
// again. With every breaker closed the guard costs an atomic load per call
// (and, on a cluster, a look at the slot map: which node the call goes to).
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// probeEvery is how often an open breaker lets a probe through; it
	// bounds how long decisions stay off Redis after the node is back.
	probeEvery = 100 * time.Millisecond
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
}

type breaker struct {
	err      error     // what the last call or probe met
	probeAt  time.Time // no probe before
	probing  bool
	lastCall time.Time
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
// the call (after may run once the map has moved on), and fails the call
// at once when that node's breaker is open, starting a probe when one is
// due.
func (g *guard) before(ctx context.Context, key string) (string, error) {
	if key == "" {
		return "", nil
	}
	addr, c := g.node(ctx, key)
	if g.nopen.Load() == 0 {
		return addr, nil
	}
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
		return addr, nil
	}
	b.lastCall = now
	if !b.probing && !now.Before(b.probeAt) && c != nil {
		b.probing = true
		go g.probe(addr, c, key)
	}
	if g.cluster != nil {
		// Costs a compare-and-swap: go-redis runs one reload at a time,
		// and none for 200 ms after the last.
		g.cluster.ReloadState(ctx)
	}
	return addr, &nodeDownError{addr: addr, err: b.err}
}

// after opens the breaker of addr, the node a call went to, when the call
// failed for want of the node.
func (g *guard) after(ctx context.Context, addr string, err error) {
	if err == nil || addr == "" || !nodeFailed(err) {
		return
	}
	now := time.Now()
	g.mu.Lock()
	if g.open[addr] == nil {
		g.open[addr] = &breaker{err: err, probeAt: now.Add(probeEvery), lastCall: now}
		g.nopen.Store(int32(len(g.open)))
	}
	g.mu.Unlock()
	if g.cluster != nil {
		g.cluster.ReloadState(ctx)
	}
}

// probe asks the node about key with a short timeout: any answer but a
// failure closes the breaker. On a cluster it also asks for the slot map,
// so a promoted replica is found within probeEvery of the reload.
func (g *guard) probe(addr string, c *redis.Client, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if g.cluster != nil {
		g.cluster.ReloadState(ctx)
	}
	// A client of its own, not the node's: once PoolSize dials have
	// failed, a go-redis pool answers every dial with the last error until
	// its own redial, once a second, succeeds, and a probe through it would
	// report the node down for up to a second after it is back.
	// (PoolSize 2: its one dial failing then starts no redial of its own.)
	o := *c.Options()
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxRetries = 2, 0, 0, -1
	o.ReadTimeout, o.WriteTimeout, o.DialTimeout = probeTimeout, probeTimeout, probeTimeout
	pc := redis.NewClient(&o)
	err := pc.Exists(ctx, key).Err()
	pc.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.open[addr]
	if b == nil {
		return
	}
	if err == nil || !nodeFailed(err) && !errors.Is(err, context.DeadlineExceeded) {
		g.forget(addr)
		return
	}
	b.err, b.probing, b.probeAt = err, false, time.Now().Add(probeEvery)
}

// forget closes addr's breaker; g.mu is held.
func (g *guard) forget(addr string) {
	delete(g.open, addr)
	g.nopen.Store(int32(len(g.open)))
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

// do runs one call whose first key is key through the guard. (Process
// spells it out, so that a decision allocates no closure.)
func (g *guard) do(ctx context.Context, key string, call func() error) error {
	addr, err := g.before(ctx, key)
	if err != nil {
		return err
	}
	err = call()
	if readOnly(err) {
		err = g.retryReadOnly(ctx, err, call)
	}
	g.after(ctx, addr, err)
	return err
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
