package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

var anatomyCalls = flag.Int("anatomy.calls", 100000, "EVALSHA calls per row of TestAnatomy")

// anatomyRow is one script TestAnatomy times, with the arguments of every
// call (one key, "k").
type anatomyRow struct {
	name, src string
	args      []any
}

// peerRows are the peers' scripts as they send them: one decision of each
// single-script peer at a quota, its EVALSHA or EVAL recorded by a hook
// (source and arguments, so the rows replay exactly what the peer sends,
// at the clock of that decision for the docs' bucket, which takes the
// caller's), named with what.
//
// rec keeps the sources across calls: a script loaded once is sent by SHA
// from then on.
func peerRows(t *testing.T, rec *scriptRecorder, q quota, what string) []anatomyRow {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	c.AddHook(rec)
	ps, err := peers(c, q)
	if err != nil {
		t.Fatal(err)
	}
	var rows []anatomyRow
	for _, p := range ps {
		if p.name == "throttled" { // GCRA in the client: no script to time
			continue
		}
		if p.name == "ulule_limiter" && what != "denies" {
			continue // a counter: the same script admits and denies; once
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rec.calls = nil
		if _, _, err := p.decide(ctx, "k"); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		// One script, perhaps sent twice: EVALSHA, then EVAL after NOSCRIPT.
		for _, call := range rec.calls {
			if call.sha != rec.calls[0].sha || rec.sources[call.sha] == "" {
				t.Fatalf("%s: recorded %d script calls, want one script with its source", p.name, len(rec.calls))
			}
		}
		if len(rec.calls) == 0 {
			t.Fatalf("%s: sent no script", p.name)
		}
		name := p.name + " " + what
		if p.name == "ulule_limiter" {
			name = p.name + " counts"
		}
		rows = append(rows, anatomyRow{name, rec.sources[rec.calls[0].sha], rec.calls[0].args})
	}
	return rows
}

// scriptRecorder is a go-redis hook that keeps the source of every script
// loaded or sent and the arguments of every script call.
type scriptRecorder struct {
	sources map[string]string // by SHA1
	calls   []scriptCall
}

type scriptCall struct {
	sha  string
	args []any // ARGV, after the one key
}

func (r *scriptRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *scriptRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *scriptRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		name := strings.ToLower(fmt.Sprint(a[0]))
		switch {
		case name == "script" && len(a) == 3 && strings.EqualFold(fmt.Sprint(a[1]), "load"):
			r.keep(fmt.Sprint(a[2]))
		case name == "eval" && len(a) >= 4:
			r.calls = append(r.calls, scriptCall{r.keep(fmt.Sprint(a[1])), a[4:]})
		case name == "evalsha" && len(a) >= 4:
			r.calls = append(r.calls, scriptCall{fmt.Sprint(a[1]), a[4:]})
		}
		return next(ctx, cmd)
	}
}

func (r *scriptRecorder) keep(src string) string {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	r.sources[sha] = src
	return sha
}

// anatomyRows are the parts a decision is made of, then the scripts: what
// Redis charges for a script call that does nothing, for the TIME every
// script reads, for the GET of its state and for the SET of an admit; and
// each of our scripts on a hot key it admits (hot-allow's quota) and on
// one it denies (hot-deny's), with a deadline far ahead, as ratelimit
// sends one under a timeout (the check is cheaper without). TestAnatomy
// adds the peers' scripts.
func anatomyRows() []anatomyRow {
	const due = 4503599627370496 // 2^52 µs, the latest deadline
	// A GCRA state as gcra.lua writes one: 'g<tat><interval>/<more>'.
	const state = "'g176454720000000036000000/0'"
	return append([]anatomyRow{
		{"return 1", "return 1", nil},
		{"TIME", "redis.call('TIME') return 1", nil},
		{"TIME, GET", "redis.call('TIME') redis.pcall('GET', KEYS[1]) return 1", nil},
		{"TIME, GET, SET PX", "redis.call('TIME') redis.pcall('GET', KEYS[1]) redis.call('SET', KEYS[1], " + state + ", 'PX', '3600000') return {1, 2, 3, 4}", nil},
		{"gcra admits", bindings.GCRASource(), []any{1000000, 1000000, 1000, 0, "all", 1, due}},
		{"gcra denies", bindings.GCRASource(), []any{100, 100, 1000, 0, "all", 1, due}},
		{"token_bucket admits", bindings.TokenBucketSource(), []any{1000000, 1000000, 1000, 0, "smooth", 1, due}},
		{"token_bucket denies", bindings.TokenBucketSource(), []any{100, 100, 1000, 0, "smooth", 1, due}},
		{"leaky_bucket admits", bindings.LeakyBucketSource(), []any{1000000, 1000000, 1000, 1, 0, due}},
		{"leaky_bucket denies", bindings.LeakyBucketSource(), []any{100, 100, 1000, 1, 0, due}},
		{"fixed_window admits", bindings.FixedWindowSource(), []any{1000000000, 1000, 1, 0, due}},
		{"fixed_window denies", bindings.FixedWindowSource(), []any{100, 1000, 1, 0, due}},
		{"sliding_window_counter admits", bindings.SlidingWindowCounterSource(), []any{1000000000, 1000, 1, 0, due}},
		{"sliding_window_counter denies", bindings.SlidingWindowCounterSource(), []any{100, 1000, 1, 0, due}},
		{"sliding_window_log admits", bindings.SlidingWindowLogSource(), []any{1000, 1, 1, 0, due}},
		{"sliding_window_log denies", bindings.SlidingWindowLogSource(), []any{100, 1000, 1, 0, due}},
	}, batchAnatomyRows()...)
}

// TestAnatomy measures what a script costs inside Redis alone: each row's
// EVALSHA sent in pipelines of 32 from 4 connections, so the server spends
// almost nothing on sockets per call, and its usec_per_call read from
// INFO commandstats. The decision benchmarks charge the same commands
// more (a loaded machine, one round trip per call); this says where a
// script's time goes. It prints one ANATOMY line per row for benchtable,
// the row's name last (it has spaces).
func TestAnatomy(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer c.Close()
	// From an empty script cache, so that every peer sends its source
	// (the hook keeps it), in every round.
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rows := anatomyRows()
	rec := &scriptRecorder{sources: map[string]string{}}
	for _, sc := range scenarios {
		switch sc.name {
		case "hot-allow":
			rows = append(rows, peerRows(t, rec, sc.q, "admits")...)
		case "hot-deny":
			rows = append(rows, peerRows(t, rec, sc.q, "denies")...)
		}
	}
	for _, row := range rows {
		sha, err := c.ScriptLoad(ctx, row.src).Result()
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		const conns, depth = 4, 32
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for sent := 0; sent < *anatomyCalls/conns; sent += depth {
					p := c.Pipeline()
					for range depth {
						p.EvalSha(ctx, sha, []string{"k"}, row.args...)
					}
					if _, err := p.Exec(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		st, err := readStats(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		calls := st.calls["evalsha"]
		if calls < float64(*anatomyCalls/2) {
			t.Fatalf("%s: INFO counts %.0f EVALSHA calls", row.name, calls)
		}
		usec := st.usec["evalsha"] / calls
		fmt.Printf("ANATOMY usec=%.2f calls=%.0f row=%s\n", usec, calls, row.name)
	}
}
