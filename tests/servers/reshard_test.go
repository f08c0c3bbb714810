package servers

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// Slot migration under load, on a cluster of the test's own (3 masters):
// 200 user keys whose limiter keys all hash to one slot S, a limiter of 5
// (they fill, mostly during the first move: the bound) and one of 10 000
// (they admit through every move: the count) per algorithm and an Atomic
// rule of two GCRA limits of 5 and 10 000 (multi.lua: two keys of S in
// one call), 32 goroutines deciding on random
// keys while S moves from master to master three times by the protocol
// redis-cli --cluster reshard follows (SETSLOT IMPORTING and MIGRATING,
// GETKEYSINSLOT and MIGRATE a few keys at a time, SETSLOT NODE). The
// migration waits for decisions between its steps, so calls meet every
// window: ASK while keys are split between the two nodes, TRYAGAIN for a
// multi-key call whose keys are, MOVED after each move.
//
// Every decision must return; an error must be ErrUnavailable and never
// come with an admission; no key may admit more than its limit; and after
// the load, each key's state on the slot's last owner must count what its
// callers were told was admitted, plus at most the calls that failed (an
// admission whose reply was lost). More would be a request decided twice;
// less, state lost in a move (and then over-admission). Errors are
// counted, not bounded: Atomic's calls fail with TRYAGAIN while its two
// keys are split between the nodes, or not yet made (Redis creates no
// key for a multi-key call of a slot being imported).
func TestSlotMigrationUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of its own")
	}
	addrs := redisserver.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const (
		tight   = 5
		wide    = 10000 // the sliding log's most
		nkeys   = 200
		workers = 32
	)
	// ReadTimeout well above any stall of this test: go-redis sends a
	// command again after a read timeout, which would count it twice
	// whatever the migration does (TestMultiUnderLoad's noRetries). The
	// redirects (MaxRedirects, 3 by default, TRYAGAIN's included) are the
	// default, as a user has them.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 30 * time.Second, PoolSize: 64})
	defer rdb.Close()

	rules := migrationRules(t, rdb, tight, wide)
	slot, keys := sameSlotKeys(t, ctx, rdb, rules, nkeys)

	nodes := clusterNodes(t, ctx, addrs)
	owner := slotOwner(t, ctx, nodes, slot)
	t.Logf("slot %d: %d user keys × %d limiter keys, first on %s", slot, len(keys), len(rules)+1, nodes[owner].addr)

	// The load. Each (rule, key) keeps its admissions and its errors.
	type tally struct{ admitted, failed atomic.Int64 }
	counts := make([][]tally, len(rules))
	for i := range counts {
		counts[i] = make([]tally, len(keys))
	}
	var (
		decided, failed, batched atomic.Int64
		inflight                 atomic.Int64
		slowest                  atomic.Int64 // ns
		badMu                    sync.Mutex
		bad                      []string // wrong decisions or unclassified errors
		samples                  = map[string]int{}
		stop                     = make(chan struct{})
		wg                       sync.WaitGroup
	)
	report := func(format string, args ...any) {
		badMu.Lock()
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
		badMu.Unlock()
	}
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(seed))
			for {
				select {
				case <-stop:
					return
				default:
				}
				ri, ki := rnd.Intn(len(rules)), rnd.Intn(len(keys))
				inflight.Add(1)
				began := time.Now()
				d, err := rules[ri].r.AllowN(ctx, keys[ki], 1)
				took := time.Since(began)
				inflight.Add(-1)
				for s := slowest.Load(); int64(took) > s && !slowest.CompareAndSwap(s, int64(took)); s = slowest.Load() {
				}
				decided.Add(1)
				tl := &counts[ri][ki]
				switch {
				case err != nil:
					failed.Add(1)
					tl.failed.Add(1)
					if !errors.Is(err, ratelimit.ErrUnavailable) {
						report("%s %s: an error that is not ErrUnavailable: %v", rules[ri].name, keys[ki], err)
					}
					if d.Allowed {
						report("%s %s: admitted with an error: %v", rules[ri].name, keys[ki], err)
					}
					msg := err.Error()
					if i := strings.IndexAny(msg, "0123456789"); i > 0 {
						msg = msg[:i] // one sample per kind, not per slot or address
					}
					badMu.Lock()
					samples[msg]++
					badMu.Unlock()
				case d.Allowed:
					tl.admitted.Add(1)
				}
				if d.Source == "redis-batch" {
					batched.Add(1)
				}
			}
		}(int64(w))
	}
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
		}
	}
	defer func() { halt(); cancel(); wg.Wait() }() // cancel: a hung decision returns

	// waitDecided waits until n more decisions have returned, so that each
	// step of the migration is met by calls.
	waitDecided := func(n int64) {
		t.Helper()
		from := decided.Load()
		deadline := time.Now().Add(30 * time.Second)
		for decided.Load() < from+n {
			if time.Now().After(deadline) {
				t.Fatalf("%d decisions in 30 s (%d in flight): the load is stuck", decided.Load()-from, inflight.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitDecided(2000)
	var moved []time.Duration
	for pass := 0; pass < 3; pass++ {
		dst := (owner + 1) % len(nodes)
		began := time.Now()
		migrateSlot(t, ctx, nodes, slot, owner, dst, func() { waitDecided(100) })
		moved = append(moved, time.Since(began))
		owner = dst
		waitDecided(1000)
	}
	halt()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d decisions had not returned 30 s after the load stopped", inflight.Load())
	}
	elapsed := time.Since(start)

	for _, b := range bad {
		t.Error(b)
	}
	// Only the last owner holds keys of the slot.
	for i, n := range nodes {
		got, err := n.c.ClusterCountKeysInSlot(ctx, int(slot)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if i != owner && got != 0 {
			t.Errorf("%s, which gave slot %d away, still holds %d of its keys", n.addr, slot, got)
		}
	}

	// Each key's state against what its callers were told.
	var admitted, exhausted, withErrors int64
	var failedBy [2]int64 // single limiters, Atomic
	for ri, r := range rules {
		for ki, k := range keys {
			adm, errs := counts[ri][ki].admitted.Load(), counts[ri][ki].failed.Load()
			admitted += adm
			if errs > 0 {
				withErrors++
			}
			failedBy[len(r.parts)-1] += errs
			for _, p := range r.parts {
				if adm > p.limit {
					t.Errorf("%s %s: %d admitted, over the limit of %d", r.name, k, adm, p.limit)
				}
				d, err := p.l.Peek(ctx, k)
				if err != nil {
					t.Fatalf("Peek %s %s: %v", p.name, k, err)
				}
				if d.Source != "redis" {
					t.Fatalf("Peek %s %s: decided by %q", p.name, k, d.Source)
				}
				counted := p.limit - d.Remaining
				if counted == p.limit {
					exhausted++
				}
				if counted < adm || counted > adm+errs {
					t.Errorf("%s %s: the state on the slot's owner counts %d, but %d were admitted and %d calls failed (%s)", p.name, k, counted, adm, errs, d)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("keys on each node now: %s", slotKeys(ctx, nodes, slot))
	}
	t.Logf("%d decisions in %v by %d goroutines over 3 moves of slot %d (%v), %d admitted, %d from coalesced batches; %d (rule, key) states full",
		decided.Load(), elapsed.Round(time.Millisecond), workers, slot, moved, admitted, batched.Load(), exhausted)
	t.Logf("%d decisions failed (%d of single limiters, %d of Atomic; %d (rule, key) pairs): %v; slowest decision %v",
		failed.Load(), failedBy[0], failedBy[1], withErrors, samples, time.Duration(slowest.Load()).Round(time.Millisecond))
	// The calls met every window of the moves, or the test checked
	// nothing of them.
	met := redirects(t, ctx, nodes)
	t.Logf("the nodes answered %v", met)
	if met["ASK"] == 0 || met["MOVED"] == 0 || met["TRYAGAIN"] == 0 {
		t.Errorf("the calls met no ASK, MOVED or TRYAGAIN: %v", met)
	}
	// Most limits of 5 (8 per key) must have filled, or the bound was
	// never tested: about 18 decisions reach each (rule, key) pair.
	if exhausted < int64(len(keys))*8/2 {
		t.Errorf("only %d of %d limits of 5 filled (%d of %d decisions failed): the bound was hardly tested", exhausted, len(keys)*8, failed.Load(), decided.Load())
	}
}

// Decisions with a slot frozen halfway through its migration, on a
// cluster of the test's own: of 150 user keys of one slot, 50 have state
// that has moved to the target, 50 state still on the source, 50 none yet.
// 32 goroutines then make 6 decisions of every rule for every key, all at
// once, so that the three kinds meet in whatever a limiter sends together.
// A single limiter's decision must be answered wherever its key is (ASK
// takes it to the target, which creates a new key's state there, never
// the source), and each key admits exactly what its limit has left: no
// error, no decision made twice or lost. Atomic's multi.lua names two
// keys of the slot: both on one node, it must be answered too; a new
// key's pair Redis answers TRYAGAIN until the migration ends (it creates
// no key for a multi-key call of a slot being imported), so those fail
// with ErrUnavailable and admit nothing. Then the migration ends, and each
// key's state on the target counts exactly its admissions.
func TestDecisionsMidMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of its own")
	}
	addrs := redisserver.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		tight, wide = 5, 10000
		per         = 50 // user keys of each kind
		asks        = 6  // decisions of every rule for every key
		workers     = 32
	)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 30 * time.Second, PoolSize: 64})
	defer rdb.Close()
	rules := migrationRules(t, rdb, tight, wide)
	slot, keys := sameSlotKeys(t, ctx, rdb, rules, 3*per)
	moved, stays := keys[:per], keys[per:2*per] // keys[2*per:] are new
	const (
		kindMoved = iota
		kindStays
		kindNew
	)
	kinds := []string{"moved", "stays", "new"}
	kindOf := func(ki int) int { return ki / per }

	// One admission of every rule for the keys that have state.
	for _, r := range rules {
		for _, k := range keys[:2*per] {
			if d, err := r.r.AllowN(ctx, k, 1); err != nil || !d.Allowed {
				t.Fatalf("%s %s before the migration: %v, %v", r.name, k, d, err)
			}
		}
	}
	nodes := clusterNodes(t, ctx, addrs)
	src := slotOwner(t, ctx, nodes, slot)
	dst := (src + 1) % len(nodes)
	limiterKeys := func(users []string) []string {
		var ks []string
		for _, k := range users {
			for _, r := range rules {
				for _, p := range r.parts {
					ks = append(ks, "rl:"+p.name+":{"+k+"}")
				}
			}
		}
		return ks
	}
	beginMigration(t, ctx, nodes, slot, src, dst)
	movedKeys := limiterKeys(moved)
	for i := 0; i < len(movedKeys); i += 100 {
		moveKeys(t, ctx, nodes, src, dst, movedKeys[i:min(i+100, len(movedKeys))])
	}
	stayed := int64(len(limiterKeys(stays)))
	countKeys := func(n clusterNode) int64 {
		t.Helper()
		c, err := n.c.ClusterCountKeysInSlot(ctx, int(slot)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := countKeys(nodes[src]); got != stayed {
		t.Fatalf("the source holds %d keys of slot %d, want %d", got, slot, stayed)
	}

	// Every decision, shared by the workers: the (rule, key) pairs in a
	// random order, each pair's decisions in a row, so that they overlap
	// (the limiter coalesces them) and meet other keys' of every kind.
	type job struct{ ri, ki int }
	var pairs, jobs []job
	for ri := range rules {
		for ki := range keys {
			pairs = append(pairs, job{ri, ki})
		}
	}
	rand.New(rand.NewSource(1)).Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	for _, p := range pairs {
		for i := 0; i < asks; i++ {
			jobs = append(jobs, p)
		}
	}
	type tally struct{ admitted, failed atomic.Int64 }
	counts := make([][]tally, len(rules))
	for i := range counts {
		counts[i] = make([]tally, len(keys))
	}
	var (
		next, returned, batched atomic.Int64
		badMu                   sync.Mutex
		bad                     []string
		samples                 = map[string]int{}
		wg                      sync.WaitGroup
	)
	report := func(format string, args ...any) {
		badMu.Lock()
		defer badMu.Unlock()
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	began := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(jobs)) {
					return
				}
				j := jobs[i]
				r, k := rules[j.ri], keys[j.ki]
				d, err := r.r.AllowN(ctx, k, 1)
				returned.Add(1)
				if d.Source == "redis-batch" {
					batched.Add(1)
				}
				tl := &counts[j.ri][j.ki]
				switch {
				case err == nil:
					if d.Allowed {
						tl.admitted.Add(1)
					}
				case len(r.parts) == 1 || kindOf(j.ki) != kindNew:
					report("%s %s (%s): %v", r.name, k, kinds[kindOf(j.ki)], err)
				default:
					tl.failed.Add(1)
					if !errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed {
						report("%s %s (%s): %v, %v", r.name, k, kinds[kindOf(j.ki)], d, err)
					}
					msg := err.Error()
					if i := strings.IndexAny(msg, "0123456789"); i > 0 {
						msg = msg[:i]
					}
					badMu.Lock()
					samples[msg]++
					badMu.Unlock()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d of %d decisions returned within 60 s", returned.Load(), len(jobs))
	}
	took := time.Since(began)
	for _, b := range bad {
		t.Error(b)
	}
	// The source held its keys and gained none: a new key's state went to
	// the target.
	if got := countKeys(nodes[src]); got != stayed {
		t.Errorf("the source holds %d keys of slot %d after the decisions, want %d", got, slot, stayed)
	}

	// The migration ends; then every key's state on the target.
	migrateSlot(t, ctx, nodes, slot, src, dst, func() {})
	var failed [3]int64
	for ri, r := range rules {
		for ki, k := range keys {
			var prior int64
			if kindOf(ki) != kindNew {
				prior = 1
			}
			adm, errs := counts[ri][ki].admitted.Load(), counts[ri][ki].failed.Load()
			failed[kindOf(ki)] += errs
			want := int64(asks) // what the rule's tightest limit leaves
			for _, p := range r.parts {
				want = min(want, p.limit-prior)
			}
			if errs == 0 && adm != want {
				t.Errorf("%s %s (%s): %d of %d admitted, want %d", r.name, k, kinds[kindOf(ki)], adm, asks, want)
			}
			for _, p := range r.parts {
				if adm > p.limit-prior {
					t.Errorf("%s %s (%s): %d admitted after %d, over the limit of %d", r.name, k, kinds[kindOf(ki)], adm, prior, p.limit)
				}
				d, err := p.l.Peek(ctx, k)
				if err != nil {
					t.Fatalf("Peek %s %s: %v", p.name, k, err)
				}
				if counted := p.limit - d.Remaining; counted < prior+adm || counted > prior+adm+errs {
					t.Errorf("%s %s (%s): the state counts %d, but %d were admitted after %d and %d calls failed (%s)", p.name, k, kinds[kindOf(ki)], counted, adm, prior, errs, d)
				}
			}
		}
	}
	if met := redirects(t, ctx, nodes); met["ASK"] == 0 {
		t.Errorf("the calls met no ASK: %v", met)
	} else {
		t.Logf("the nodes answered %v", met)
	}
	t.Logf("slot %d halfway from %s to %s: %d decisions in %v, %d from coalesced batches; Atomic's failed: %d of %d for new keys, %v",
		slot, nodes[src].addr, nodes[dst].addr, len(jobs), took.Round(time.Millisecond), batched.Load(), failed[kindNew], per*asks, samples)
}

// A migRule is a rule of the migration tests and the limiters whose state
// it counts in (two for Atomic).
type migRule struct {
	name string
	r    interface {
		AllowN(context.Context, string, int64) (ratelimit.Decision, error)
	}
	parts []migPart
}

type migPart struct {
	name  string
	l     *ratelimit.Limiter
	limit int64
}

// migPeriod is every migration test limit's Period, the scripts' longest
// (1e11 ms): a GCRA unit of a limit of 10 000 comes back after 2e7 ms, so
// nothing refills during a test, and the window algorithms' windows
// (aligned to the epoch) are 3.2 years long, so no test spans two.
const migPeriod = 1e11 * time.Millisecond

// migrationRules returns a limiter per algorithm and limit over rdb, and
// last an Atomic rule of two GCRA limiters, of the first limit and the
// last.
func migrationRules(t *testing.T, rdb *redis.ClusterClient, limits ...int64) []migRule {
	t.Helper()
	newLimiter := func(name string, alg ratelimit.Algorithm, n int64) *ratelimit.Limiter {
		l, err := ratelimit.New(rdb, name, ratelimit.Per(n, migPeriod), ratelimit.WithAlgorithm(alg))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var rules []migRule
	for alg := ratelimit.GCRA; alg <= ratelimit.SlidingWindowCounter; alg++ {
		for _, n := range limits {
			name := fmt.Sprintf("mig-%v-%d", alg, n)
			l := newLimiter(name, alg, n)
			rules = append(rules, migRule{name: name, r: l, parts: []migPart{{name, l, n}}})
		}
	}
	var parts []migPart
	var ls []*ratelimit.Limiter
	for _, n := range []int64{limits[0], limits[len(limits)-1]} {
		name := fmt.Sprintf("mig-atomic-%d", n)
		l := newLimiter(name, ratelimit.GCRA, n)
		parts, ls = append(parts, migPart{name, l, n}), append(ls, l)
	}
	both, err := ratelimit.Atomic(ls...)
	if err != nil {
		t.Fatal(err)
	}
	return append(rules, migRule{name: "atomic", r: both, parts: parts})
}

// sameSlotKeys returns the slot of "k0" and the first n user keys "k<i>"
// whose every limiter key of rules lies in it. A limiter keeps key's state
// in "rl:<name>:{<key>}" (these keys need no escaping), so the hash tag
// alone names the slot; CLUSTER KEYSLOT checks every limiter key.
func sameSlotKeys(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, rules []migRule, n int) (uint16, []string) {
	t.Helper()
	slot := keySlot("k0")
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprintf("k%d", i); keySlot(k) == slot {
			keys = append(keys, k)
		}
	}
	pipe := rdb.Pipeline()
	var slots []*redis.IntCmd
	for _, k := range keys {
		for _, r := range rules {
			for _, p := range r.parts {
				slots = append(slots, pipe.ClusterKeySlot(ctx, "rl:"+p.name+":{"+k+"}"))
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range slots {
		if c.Val() != int64(slot) {
			t.Fatalf("CLUSTER KEYSLOT %s = %d, want %d", c.Args()[2], c.Val(), slot)
		}
	}
	return slot, keys
}

// keySlot is Redis Cluster's slot of a key without a hash tag, or of a
// hash tag: CRC16 (XMODEM) mod 16384.
func keySlot(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
}

// A clusterNode is a master of the test's cluster.
type clusterNode struct {
	addr, id, host, port string
	c                    *redis.Client
}

func clusterNodes(t *testing.T, ctx context.Context, addrs []string) []clusterNode {
	t.Helper()
	var nodes []clusterNode
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ReadTimeout: 30 * time.Second})
		t.Cleanup(func() { c.Close() })
		id, err := c.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(a)
		nodes = append(nodes, clusterNode{addr: a, id: id, host: host, port: port, c: c})
	}
	return nodes
}

// slotOwner returns the index in nodes of the master that serves slot.
func slotOwner(t *testing.T, ctx context.Context, nodes []clusterNode, slot uint16) int {
	t.Helper()
	ranges, err := nodes[0].c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if int(slot) >= r.Start && int(slot) <= r.End {
			for i, n := range nodes {
				if n.addr == r.Nodes[0].Addr {
					return i
				}
			}
		}
	}
	t.Fatalf("no master of %v serves slot %d", nodes, slot)
	return -1
}

// migrateSlot moves slot from nodes[src] to nodes[dst] as redis-cli
// --cluster reshard does, calling between() after each step: the target
// imports, the source migrates, keys move 20 at a time (a call in between
// can find its key on either node, and a multi-key call its keys on both),
// then every master is told the slot's new owner, the target first.
func migrateSlot(t *testing.T, ctx context.Context, nodes []clusterNode, slot uint16, src, dst int, between func()) {
	t.Helper()
	beginMigration(t, ctx, nodes, slot, src, dst)
	between()
	for {
		keys, err := nodes[src].c.ClusterGetKeysInSlot(ctx, int(slot), 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		moveKeys(t, ctx, nodes, src, dst, keys)
		between()
	}
	endMigration(t, ctx, nodes, slot, src, dst, between)
}

// beginMigration sets slot importing on nodes[dst] from nodes[src], and
// migrating on nodes[src] to nodes[dst].
func beginMigration(t *testing.T, ctx context.Context, nodes []clusterNode, slot uint16, src, dst int) {
	t.Helper()
	must(t, ctx, nodes[dst].c, "cluster", "setslot", slot, "importing", nodes[src].id)
	must(t, ctx, nodes[src].c, "cluster", "setslot", slot, "migrating", nodes[dst].id)
}

// moveKeys moves keys from nodes[src] to nodes[dst] in one MIGRATE. No
// REPLACE: a key the target holds already would be state written on both
// nodes, which MIGRATE must then refuse (BUSYKEY).
func moveKeys(t *testing.T, ctx context.Context, nodes []clusterNode, src, dst int, keys []string) {
	t.Helper()
	args := []any{"migrate", nodes[dst].host, nodes[dst].port, "", 0, 10000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	must(t, ctx, nodes[src].c, args...)
}

// endMigration gives slot, emptied on nodes[src], to nodes[dst]: the
// target is told first, then between() runs, then the source and the
// other masters are told.
func endMigration(t *testing.T, ctx context.Context, nodes []clusterNode, slot uint16, src, dst int, between func()) {
	t.Helper()
	must(t, ctx, nodes[dst].c, "cluster", "setslot", slot, "node", nodes[dst].id)
	between()
	must(t, ctx, nodes[src].c, "cluster", "setslot", slot, "node", nodes[dst].id)
	for i, n := range nodes {
		if i != src && i != dst {
			must(t, ctx, n.c, "cluster", "setslot", slot, "node", nodes[dst].id)
		}
	}
}

func must(t *testing.T, ctx context.Context, c *redis.Client, args ...any) {
	t.Helper()
	if err := c.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%s: %v: %v", c.Options().Addr, args, err)
	}
}

// redirects sums what the nodes answered ASK, MOVED and TRYAGAIN
// (INFO errorstats, since the nodes started: the cluster is the test's).
func redirects(t *testing.T, ctx context.Context, nodes []clusterNode) map[string]int64 {
	t.Helper()
	sum := map[string]int64{}
	for _, n := range nodes {
		info, err := n.c.Info(ctx, "errorstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			for _, e := range []string{"ASK", "MOVED", "TRYAGAIN"} {
				var c int64
				if _, err := fmt.Sscanf(line, "errorstat_"+e+":count=%d", &c); err == nil {
					sum[e] += c
				}
			}
		}
	}
	return sum
}

// slotKeys says how many keys of slot each node holds, for a failure's log.
func slotKeys(ctx context.Context, nodes []clusterNode, slot uint16) string {
	var s []string
	for _, n := range nodes {
		got, err := n.c.ClusterCountKeysInSlot(ctx, int(slot)).Result()
		s = append(s, fmt.Sprintf("%s: %d %v", n.addr, got, err))
	}
	return strings.Join(s, ", ")
}
