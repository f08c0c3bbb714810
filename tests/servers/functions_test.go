package servers

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// The Functions library of the bundled scripts (bindings/redlimit.functions.lua)
// on a real redis-server and on the three-master cluster: the same replies
// as EVALSHA for every scenario step, a library that outlives SCRIPT FLUSH,
// comes back after FUNCTION FLUSH and is refused when it is stale. miniredis
// has no Functions, so these tests need the real servers.

// fnClient is what these tests hold: a client the library works through
// and that runs plain commands too.
type fnClient interface {
	bindings.FunctionsCmdable
	redis.Cmdable
	AddHook(redis.Hook)
}

type fnTarget struct {
	name string
	open func(t *testing.T) fnClient
}

func fnTargets() []fnTarget {
	return []fnTarget{
		{"redis-resp2", func(t *testing.T) fnClient { return standalone(t, 2) }},
		{"redis-resp3", func(t *testing.T) fnClient { return standalone(t, 3) }},
		{"cluster", func(t *testing.T) fnClient { return cluster(t) }},
	}
}

// eachMaster runs fn on every primary: go-redis sends FUNCTION FLUSH and
// FUNCTION LIST to one node of a cluster, so the tests address each.
func eachMaster(t *testing.T, c fnClient, fn func(node *redis.Client) error) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error { return fn(node) })
	case *redis.Client:
		err = fn(c)
	default:
		t.Fatalf("unexpected client %T", c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// onServerAndCluster runs f on the real server (RESP3) and on the cluster.
func onServerAndCluster(t *testing.T, f func(t *testing.T, c fnClient)) {
	for _, tg := range fnTargets() {
		if tg.name != "redis-resp2" {
			t.Run(tg.name, func(t *testing.T) { f(t, tg.open(t)) })
		}
	}
}

func functionFlush(t *testing.T, c fnClient) {
	t.Helper()
	eachMaster(t, c, func(node *redis.Client) error { return node.FunctionFlush(context.Background()).Err() })
}

// primaryOf is the address of the primary that holds key.
func primaryOf(t *testing.T, c fnClient, key string) string {
	t.Helper()
	switch c := c.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	case *redis.Client:
		return c.Options().Addr
	}
	t.Fatalf("unexpected client %T", c)
	return ""
}

// libraryCodes is the code of the library redlimit on each primary ("" where
// it is missing).
func libraryCodes(t *testing.T, c fnClient) map[string]string {
	t.Helper()
	var mu sync.Mutex
	out := map[string]string{}
	eachMaster(t, c, func(node *redis.Client) error {
		libs, err := node.FunctionList(context.Background(), redis.FunctionListQuery{LibraryNamePattern: bindings.FunctionsLibrary, WithCode: true}).Result()
		if err != nil {
			return err
		}
		code := ""
		for _, l := range libs {
			if l.Name == bindings.FunctionsLibrary {
				code = l.Code
			}
		}
		mu.Lock()
		out[node.Options().Addr] = code
		mu.Unlock()
		return nil
	})
	return out
}

// The library is no script: SCRIPT FLUSH leaves it, and calls through it
// never touch the script cache. After FUNCTION FLUSH the first calls, single
// and batched, many at once, load it again on the primary they reach (the
// key's) and succeed.
func TestFunctionsFlush(t *testing.T) {
	onServerAndCluster(t, func(t *testing.T, c fnClient) {
		ctx := context.Background()
		fc := bindings.WithFunctions(c)
		key := fmt.Sprintf("fnflush:{u}:%d", time.Now().UnixNano())
		p := bindings.GCRAParams{Burst: 1000, Rate: 1, Period: time.Second, Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 1}}}

		if err := bindings.LoadFunctions(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := bindings.GCRA(ctx, fc, []string{key}, p); err != nil {
			t.Fatalf("after SCRIPT FLUSH: %v", err)
		}
		if err := bindings.CheckFunctions(ctx, c); err != nil {
			t.Errorf("after SCRIPT FLUSH: CheckFunctions = %v", err)
		}
		if loaded := c.ScriptExists(ctx, bindings.GCRAScript.Hash()).Val(); loaded[0] {
			t.Error("a call through the library loaded the script")
		}

		// Many callers meet the missing library at once.
		functionFlush(t, c)
		if err := bindings.CheckFunctions(ctx, c); !errors.Is(err, bindings.ErrFunctionsMissing) {
			t.Fatalf("after FUNCTION FLUSH: CheckFunctions = %v, want ErrFunctionsMissing", err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if g%4 == 0 {
					b := bindings.NewBatch()
					pending := []*bindings.Pending[bindings.GCRAResult]{b.GCRA([]string{key}, p), b.GCRA([]string{key}, p)}
					if err := b.Exec(ctx, fc); err != nil {
						errs <- err
					}
					for _, pd := range pending {
						if _, err := pd.Result(); err != nil {
							errs <- err
						}
					}
					return
				}
				if _, err := bindings.GCRA(ctx, fc, []string{key}, p); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a call after FUNCTION FLUSH: %v", err)
		}
		at := primaryOf(t, c, key)
		if code := libraryCodes(t, c)[at]; code != bindings.FunctionsCode() {
			t.Errorf("%s, the key's primary: after the calls the library is %d bytes, want the bindings' %d", at, len(code), len(bindings.FunctionsCode()))
		}
		// 1 + 24 single calls + 8 batches of 2: every one counted once.
		peek := bindings.GCRAParams{Burst: 1000, Rate: 1, Period: time.Second, Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 0}}}
		if r, err := bindings.GCRA(ctx, c, []string{key}, peek); err != nil || r.Decisions[0].Remaining != 1000-41 {
			t.Errorf("after the calls: %+v, %v; want 41 counted", r, err)
		}
	})
}

// Other code under the library's name is found by CheckFunctions, refused by
// a call whose function it lacks, and replaced only by LoadFunctions. A
// stale library that has the same functions is run by calls (they do not
// read the library's code on every call): only CheckFunctions and
// LoadFunctions see it, which is why a deploy runs LoadFunctions.
func TestFunctionsStale(t *testing.T) {
	onServerAndCluster(t, func(t *testing.T, c fnClient) {
		ctx := context.Background()
		fc := bindings.WithFunctions(c)
		key := fmt.Sprintf("fnstale:{u}:%d", time.Now().UnixNano())
		p := bindings.FixedWindowParams{Limit: 10, Window: time.Minute, Cost: 1}
		other := "#!lua name=" + bindings.FunctionsLibrary + "\nredis.register_function('redlimit_other', function() return 1 end)\n"
		functionFlush(t, c)
		eachMaster(t, c, func(node *redis.Client) error { return node.FunctionLoad(ctx, other).Err() })

		err := bindings.CheckFunctions(ctx, c)
		if !errors.Is(err, bindings.ErrFunctionsStale) {
			t.Fatalf("CheckFunctions = %v, want ErrFunctionsStale", err)
		}
		if _, isCluster := c.(*redis.ClusterClient); isCluster && strings.Count(err.Error(), "holds other code") != len(clusterAddrs) {
			t.Errorf("CheckFunctions did not name every master:\n%v", err)
		}
		if _, err := bindings.FixedWindow(ctx, fc, key, p); !errors.Is(err, bindings.ErrFunctionsStale) {
			t.Errorf("call: err = %v, want ErrFunctionsStale", err)
		}
		b := bindings.NewBatch()
		pd := b.FixedWindow(key, p)
		if err := b.Exec(ctx, fc); !errors.Is(err, bindings.ErrFunctionsStale) {
			t.Errorf("batch: err = %v, want ErrFunctionsStale", err)
		}
		if _, err := pd.Result(); !errors.Is(err, bindings.ErrFunctionsStale) {
			t.Errorf("batch result: err = %v, want ErrFunctionsStale", err)
		}
		for addr, code := range libraryCodes(t, c) {
			if code != other {
				t.Errorf("%s: a call replaced the other library", addr)
			}
		}
		if n := c.Exists(ctx, key).Val(); n != 0 {
			t.Error("a refused call wrote its key")
		}

		// The same functions with other code: CheckFunctions sees it,
		// LoadFunctions replaces it.
		older := strings.Replace(bindings.FunctionsCode(), "-- Code generated by luagen.", "-- An older version.", 1)
		eachMaster(t, c, func(node *redis.Client) error { return node.FunctionLoadReplace(ctx, older).Err() })
		if _, err := bindings.FixedWindow(ctx, fc, key, p); err != nil {
			t.Errorf("call on a library with the same functions: %v", err)
		}
		if err := bindings.CheckFunctions(ctx, c); !errors.Is(err, bindings.ErrFunctionsStale) {
			t.Errorf("CheckFunctions on an older version = %v, want ErrFunctionsStale", err)
		}
		if err := bindings.LoadFunctions(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := bindings.CheckFunctions(ctx, c); err != nil {
			t.Errorf("after LoadFunctions: %v", err)
		}
		// Loading what is there already changes nothing.
		if err := bindings.LoadFunctions(ctx, c); err != nil {
			t.Errorf("LoadFunctions again: %v", err)
		}
	})
}

// The premise of LoadFunctions on a cluster: go-redis v9.7.3 sends FUNCTION
// LOAD from a *redis.ClusterClient to one master only (it routes by the
// slot of the word "load"), so the library must be loaded on each.
func TestClusterFunctionLoadReachesOneMaster(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	functionFlush(t, c)
	if err := c.FunctionLoad(ctx, bindings.FunctionsCode()).Err(); err != nil {
		t.Fatal(err)
	}
	holding := 0
	for _, code := range libraryCodes(t, c) {
		if code != "" {
			holding++
		}
	}
	if holding != 1 {
		t.Errorf("ClusterClient.FunctionLoad reached %d of %d masters; if go-redis now loads on every master, LoadFunctions's doc can say so", holding, len(clusterAddrs))
	}
	if err := bindings.LoadFunctions(ctx, c); err != nil {
		t.Fatal(err)
	}
	for addr, code := range libraryCodes(t, c) {
		if code != bindings.FunctionsCode() {
			t.Errorf("%s: LoadFunctions did not load the library", addr)
		}
	}
}

// The README's redis-cli lines for the library, run as written, on the
// server and on the cluster.
func TestRedisCLIFunctions(t *testing.T) {
	needReal(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli is not on PATH")
	}
	host, port, _ := strings.Cut(standaloneAddr, ":")
	c := standalone(t, 2)
	functionFlush(t, c)
	load := exec.Command("sh", "-c", `"$0" -h "$1" -p "$2" -x FUNCTION LOAD REPLACE < "$3"`, cli, host, port, filepath.Join("..", "..", "bindings", "redlimit.functions.lua"))
	if out, err := load.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "redlimit" {
		t.Fatalf("FUNCTION LOAD: %v\n%s", err, out)
	}
	key := fmt.Sprintf("rl:{user:42}:%d", time.Now().UnixNano())
	out, err := exec.Command(cli, "-h", host, "-p", port, "FCALL", "redlimit_token_bucket", "1", key, "10", "5", "1000", "0", "smooth", "1", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v\n%s", err, out)
	}
	if got, want := strings.Fields(string(out)), []string{"1", "9", "0", "200"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("redis-cli FCALL printed %q, want %q (docs/functions.md's example)", got, want)
	}

	cc := cluster(t)
	functionFlush(t, cc)
	// docs/functions.md's loop over the masters, as written (redis-cli
	// on PATH, as the docs' "redis-cli" is). The library is read from
	// stdin: passed as one argument ("$(cat …)", as these docs had it) it
	// is over the 128 KiB Linux passes to a program since the library grew
	// past it.
	chost, cport, _ := strings.Cut(clusterAddrs[0], ":")
	load = exec.Command("sh", "-c", `PATH="$(dirname "$0"):$PATH"; redis-cli -h "$1" -p "$2" CLUSTER NODES | awk '$3 ~ /master/ { split($2, a, "@"); print a[1] }' |
  while read -r n; do redis-cli -h "${n%:*}" -p "${n##*:}" -x FUNCTION LOAD REPLACE < "$3"; done`,
		cli, chost, cport, filepath.Join("..", "..", "bindings", "redlimit.functions.lua"))
	if out, err := load.CombinedOutput(); err != nil || strings.Count(string(out), "redlimit") != 3 {
		t.Fatalf("the docs' loop over the masters: %v\n%s", err, out)
	}
	for addr, code := range libraryCodes(t, cc) {
		if code != bindings.FunctionsCode() {
			t.Errorf("%s: the docs' loop did not load the library", addr)
		}
	}
	if err := bindings.CheckFunctions(context.Background(), cc); err != nil {
		t.Errorf("after the docs' loop: CheckFunctions = %v", err)
	}
}

// Function names are one namespace per server, compared without regard to
// case: a library evil that registers REDLIMIT_GCRA must never answer for
// redlimit. Before ours is loaded, calls refuse it (a 1 per hour limit
// admits nothing, evil's code never runs), LoadFunctions and
// CheckFunctions name it; after ours was loaded and then deleted, the
// next check (FunctionsRecheck after the last) refuses it too.
func TestFunctionsConflict(t *testing.T) {
	onServerAndCluster(t, func(t *testing.T, c fnClient) {
		ctx := context.Background()
		key := fmt.Sprintf("fnconflict:{u}:%d", time.Now().UnixNano())
		p := bindings.GCRAParams{Burst: 1, Rate: 1, Period: time.Hour, Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: 1}}}
		evil := "#!lua name=evil\nredis.register_function('REDLIMIT_GCRA', function(keys, args) redis.call('SET', keys[1], 'evil') return {1, 1, 0, 0} end)\n"
		conflict := func(what string, err error) {
			t.Helper()
			var ce *bindings.FunctionsConflictError
			if !errors.Is(err, bindings.ErrFunctionsConflict) || !errors.As(err, &ce) || ce.Library != "evil" || ce.Function != "redlimit_gcra" {
				t.Errorf("%s: err = %v, want a *FunctionsConflictError naming evil", what, err)
			}
		}
		admitted := func(fc *bindings.FunctionsClient) int {
			n := 0
			for i := 0; i < 5; i++ {
				if r, err := bindings.GCRA(ctx, fc, []string{key}, p); err == nil && r.Decisions[0].Allowed == 1 {
					n++
				} else if err != nil {
					conflict("call", err)
				}
			}
			return n
		}

		functionFlush(t, c)
		eachMaster(t, c, func(node *redis.Client) error { return node.FunctionLoad(ctx, evil).Err() })
		if n := admitted(bindings.WithFunctions(c)); n != 0 {
			t.Errorf("before ours: a 1 per hour limit admitted %d of 5", n)
		}
		conflict("LoadFunctions", bindings.LoadFunctions(ctx, c))
		conflict("CheckFunctions", bindings.CheckFunctions(ctx, c))
		if v := c.Get(ctx, key).Val(); v == "evil" {
			t.Fatal("evil's function ran")
		}

		// After ours: loaded, used, then deleted, and the name taken.
		eachMaster(t, c, func(node *redis.Client) error { return node.FunctionDelete(ctx, "evil").Err() })
		fc := bindings.WithFunctions(c)
		if n := admitted(fc); n != 1 {
			t.Fatalf("with ours: admitted %d of 5, want 1", n)
		}
		eachMaster(t, c, func(node *redis.Client) error {
			// Only the key's primary holds ours: calls load it where they go.
			if err := node.FunctionDelete(ctx, bindings.FunctionsLibrary).Err(); err != nil && !strings.Contains(err.Error(), "Library not found") {
				return err
			}
			return node.FunctionLoad(ctx, evil).Err()
		})
		time.Sleep(bindings.FunctionsRecheck) // the next call checks again
		if n := admitted(fc); n != 0 {
			t.Errorf("after ours was replaced: admitted %d of 5", n)
		}
		if v := c.Get(ctx, key).Val(); v == "evil" {
			t.Fatal("evil's function ran")
		}
		eachMaster(t, c, func(node *redis.Client) error { return node.FunctionDelete(ctx, "evil").Err() })
		if err := bindings.LoadFunctions(ctx, c); err != nil {
			t.Fatal(err)
		}
	})
}
