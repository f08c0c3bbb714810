// Package preflight checks, at start-up, what in a Redis server's
// configuration or the client's own makes limits reset, stop or count a
// request twice.
//
//	findings, err := preflight.Check(ctx, rdb)
//	for _, f := range findings {
//		log.Print(f) // "warning persistence (10.0.0.5:6379): no AOF and ..."
//	}
//
// docs/operations.md says what each fault costs, measured.
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// A Finding is one thing Check found that can make limits wrong.
type Finding struct {
	// Name says what was checked: "eviction", "memory", "persistence",
	// "cluster-coverage", "full-coverage", "replicas", "functions",
	// "clock", "retries", "version" or "config".
	Name string
	// Severity is "critical" when limits are wrong or off now (slots no
	// node serves, memory full, a library that is not redlimit's answering
	// for it), "warning" when a fault would reset or stop them (a restart,
	// memory pressure, a read timeout).
	Severity string
	// Node is the server it is about; "" for the client's own options.
	Node string
	// Why says in one line what happens and what to change.
	Why string
}

// String reads like "warning persistence (10.0.0.5:6379): no AOF ...".
func (f Finding) String() string {
	node := ""
	if f.Node != "" {
		node = " (" + f.Node + ")"
	}
	return f.Severity + " " + f.Name + node + ": " + f.Why
}

// Check reads the configuration of the Redis behind c (every master of a
// cluster or ring) and of c itself, and returns what can make limits reset
// silently, stop, or count a request twice, grouped by node; it changes
// nothing. A server that refuses CONFIG GET yields a "config" finding; an
// error means Redis could not be reached.
func Check(ctx context.Context, c redis.UniversalClient) ([]Finding, error) {
	var (
		mu sync.Mutex // a cluster's masters and a ring's shards are checked at once
		fs []Finding
	)
	add := func(f Finding) {
		mu.Lock()
		fs = append(fs, f)
		mu.Unlock()
	}
	retries := 0
	switch c := c.(type) {
	case *redis.Client:
		retries = c.Options().MaxRetries
		if err := checkNode(ctx, c, add); err != nil {
			return nil, err
		}
	case *redis.ClusterClient:
		// Its MaxRetries is its nodes' (0 means none here); MaxRedirects
		// also resends after a timeout, but MOVED and ASK need it.
		retries = c.Options().MaxRetries
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := checkNode(ctx, m, add); err != nil {
				return err
			}
			info, err := m.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if v := infoField(info, "cluster_slots_ok"); v != "16384" || infoField(info, "cluster_state") != "ok" {
				add(Finding{"cluster-coverage", "critical", m.Options().Addr, fmt.Sprintf("cluster_state %s with %s of 16384 slots served: keys in the other slots get no decision from Redis", infoField(info, "cluster_state"), v)})
			}
			if v, ok := config(ctx, m, "cluster-require-full-coverage"); ok && v == "yes" {
				add(Finding{"full-coverage", "warning", m.Options().Addr, "cluster-require-full-coverage yes: while one master is down and not yet replaced, every node refuses every key; set it to no so the other masters keep deciding"})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		byNode(fs)
	case *redis.Ring:
		retries = c.Options().MaxRetries
		if err := c.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error { return checkNode(ctx, s, add) }); err != nil {
			return nil, err
		}
		byNode(fs)
	default:
		return nil, fmt.Errorf("%w: Check takes a *redis.Client, *redis.ClusterClient or *redis.Ring, not %T", ratelimit.ErrInvalid, c)
	}
	if retries > 0 {
		add(Finding{"retries", "warning", "", fmt.Sprintf("MaxRetries %d: after a read timeout go-redis sends the script again, and a request that Redis counted once is counted twice; set MaxRetries: -1 on the limiter's client", retries)})
	}
	return fs, nil
}

// byNode orders findings of nodes checked at once by node, each node's in
// the order they were found.
func byNode(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Node < fs[j].Node })
}

// checkNode checks one server (a master).
func checkNode(ctx context.Context, c *redis.Client, add func(Finding)) error {
	addr := c.Options().Addr
	info, err := c.Info(ctx).Result() // one call, the default sections: Redis 6.2 takes at most one
	if err != nil {
		return err
	}
	if v := infoField(info, "redis_version"); v != "" && !atLeast62(v) {
		add(Finding{"version", "critical", addr, "Redis " + v + ": the scripts need Redis 6.2 or later"})
	}
	if infoField(info, "role") == "master" && infoField(info, "connected_slaves") == "0" && infoField(info, "cluster_enabled") == "1" {
		add(Finding{"replicas", "warning", addr, "a master without replicas: if it crashes, its keys get no decision from Redis until it is back, and come back empty unless it persists"})
	}
	checkFunctions(ctx, c, addr, add)
	sent := time.Now()
	if now, err := c.Time(ctx).Result(); err == nil {
		got := time.Now()
		// The server read its clock somewhere between sent and got.
		if f, ok := clockFinding(addr, now.Sub(sent.Add(got.Sub(sent)/2)), got.Sub(sent)/2); ok {
			add(f)
		}
	}

	policy, ok := config(ctx, c, "maxmemory-policy")
	if !ok {
		add(Finding{"config", "warning", addr, "CONFIG GET is refused here, so eviction, memory and persistence were not checked; ask the provider for maxmemory-policy noeviction and AOF"})
		return nil
	}
	maxmem, _ := strconv.ParseInt(mustConfig(ctx, c, "maxmemory"), 10, 64)
	used, _ := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	if maxmem > 0 {
		switch {
		case strings.HasPrefix(policy, "volatile-"):
			add(Finding{"eviction", "warning", addr, "maxmemory-policy " + policy + ": under memory pressure Redis evicts keys with a TTL first, and every limiter key has one; an evicted key is a limit reset; use noeviction (or give limiters a Redis of their own)"})
		case strings.HasPrefix(policy, "allkeys-"):
			add(Finding{"eviction", "warning", addr, "maxmemory-policy " + policy + ": under memory pressure limiter keys are evicted, and each eviction silently resets a limit; use noeviction"})
		}
		if pct := used * 100 / maxmem; pct >= 90 {
			sev, what := "warning", "close to maxmemory"
			if used >= maxmem {
				sev, what = "critical", "at maxmemory"
			}
			why := fmt.Sprintf("used_memory %d of maxmemory %d (%d%%), %s: ", used, maxmem, pct, what)
			if policy == "noeviction" {
				why += "write scripts fail with OOM and the fallback decides every request (FailOpen stops limiting)"
			} else {
				why += "Redis is evicting keys, and limits reset with them"
			}
			add(Finding{"memory", sev, addr, why})
		}
	}
	aof := mustConfig(ctx, c, "appendonly") == "yes"
	save := strings.TrimSpace(mustConfig(ctx, c, "save"))
	switch {
	case !aof && save == "":
		add(Finding{"persistence", "warning", addr, "no AOF and no RDB save points: a restart forgets every limit (a day's quota starts again); set appendonly yes (appendfsync everysec loses at most about 2 s)"})
	case !aof:
		add(Finding{"persistence", "warning", addr, "RDB only (save " + save + "): a restart forgets what was counted since the last snapshot; set appendonly yes"})
	case mustConfig(ctx, c, "appendfsync") == "no":
		add(Finding{"persistence", "warning", addr, "appendfsync no: a crash of the machine loses what the OS had not written (up to ~30 s of counts); appendfsync everysec loses at most about 2 s"})
	}
	return nil
}

// clockFinding judges a server clock that is off this process's by offset,
// give or take uncertainty (half the TIME round trip). The scripts take
// the server's TIME as now, and a caller clock (WithClock) only within 60 s
// of it; a replica that takes over a master's keys judges the instants the
// master wrote on its own clock. Off by more than a second, limits are off
// by as much after a failover; by more than 60 s, caller clocks are refused
// and a replica refuses the states it takes over (BADSTATE) until they
// expire.
func clockFinding(addr string, offset, uncertainty time.Duration) (Finding, bool) {
	off := offset
	if off < 0 {
		off = -off
	}
	off -= uncertainty // what it is off by at least
	if off <= time.Second {
		return Finding{}, false
	}
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	what := fmt.Sprintf("TIME here is %s %s this process's clock", off.Round(time.Second), dir)
	if off > 60*time.Second {
		return Finding{"clock", "critical", addr, what + ": calls with WithClock are refused (the scripts allow a caller clock 60 s from TIME), and a replica whose clock differs as much from its master's refuses the states it takes over after a failover (BADSTATE); run NTP on every server"}, true
	}
	return Finding{"clock", "warning", addr, what + ": servers whose clocks differ by as much move each limit by as much when a replica takes over; run NTP on every server"}, true
}

// checkFunctions finds a redlimit library that is not this version's, and
// redlimit's function names held by another library (function names are
// global in Redis 7, so FCALL would run that library's code).
func checkFunctions(ctx context.Context, c *redis.Client, addr string, add func(Finding)) {
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		return // before Redis 7, or FUNCTION refused: nothing to check
	}
	for _, lib := range libs {
		if lib.Name == bindings.FunctionsLibrary {
			if err := bindings.CheckFunctions(ctx, c); err != nil {
				add(Finding{"functions", "critical", addr, fmt.Sprintf("the %s library here is not this version's (%v): WithFunctions calls would run other code; load it again (LoadFunctions)", lib.Name, err)})
			}
			continue
		}
		for _, f := range lib.Functions {
			if strings.HasPrefix(strings.ToLower(f.Name), bindings.FunctionsLibrary+"_") {
				add(Finding{"functions", "critical", addr, fmt.Sprintf("library %q registers %s: WithFunctions would run its code for redlimit's; FUNCTION DELETE %s if it is not yours", lib.Name, f.Name, lib.Name)})
			}
		}
	}
}

// config reads one configuration parameter; ok is false when CONFIG GET
// is refused or the parameter unknown.
func config(ctx context.Context, c *redis.Client, name string) (string, bool) {
	m, err := c.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", false
	}
	v, ok := m[name]
	return v, ok
}

func mustConfig(ctx context.Context, c *redis.Client, name string) string {
	v, _ := config(ctx, c, name)
	return v
}

// infoField returns a field of an INFO or CLUSTER INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// atLeast62 reports a version of 6.2 or later ("7.0.15", "6.2.0"; Valkey
// reports redis_version 7.2.4).
func atLeast62(v string) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true // not a version we can read: say nothing
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return major > 6 || major == 6 && minor >= 2
}
