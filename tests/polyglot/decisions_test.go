package polyglot

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
)

// A decision is the four-number reply, read the same way from an example's
// output and from the Go bindings.
type decision struct {
	Allowed    bool
	Remaining  int64
	Never      bool // retry_after -1: the cost can never pass
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// An algo is one script the examples decide with: their command-line
// arguments (but cost) and the same call through the Go bindings. The limit
// is 3 per hour, so no token comes back while a test runs: 3 calls pass,
// the next ones are denied, whatever the machine's load.
type algo struct {
	script string
	args   []string
	call   func(ctx context.Context, c redis.Scripter, key string, cost int64) (decision, error)
}

var algos = []algo{
	{
		script: "gcra",
		args:   []string{"burst=3", "rate=3", "period=3600000", "take=all"}, // a bare number is in the wire unit, ms
		call: func(ctx context.Context, c redis.Scripter, key string, cost int64) (decision, error) {
			r, err := bindings.GCRA(ctx, c, []string{key}, bindings.GCRAParams{Burst: 3, Rate: 3, Period: time.Hour,
				Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: cost}}})
			if err != nil {
				return decision{}, err
			}
			d := r.Decisions[0]
			return fromGo(d.Allowed == 1, d.Remaining, d.RetryAfter, d.ResetAfter), nil
		},
	},
	{
		script: "token_bucket",
		args:   []string{"capacity=3", "rate=3", "period=1h", "refill=smooth"},
		call: func(ctx context.Context, c redis.Scripter, key string, cost int64) (decision, error) {
			r, err := bindings.TokenBucket(ctx, c, []string{key}, bindings.TokenBucketParams{
				Capacity: 3, Rate: 3, Period: time.Hour, Refill: bindings.TokenBucketRefillSmooth,
				Requests: []bindings.TokenBucketRequest{{Cost: cost}},
			})
			if err != nil {
				return decision{}, err
			}
			d := r.Decisions[0]
			return fromGo(d.Allowed == 1, d.Remaining, d.RetryAfter, d.ResetAfter), nil
		},
	},
}

func fromGo(allowed bool, remaining int64, retry, reset time.Duration) decision {
	d := decision{Allowed: allowed, Remaining: remaining, RetryAfter: retry, ResetAfter: reset}
	if retry == -time.Millisecond {
		d = decision{Allowed: allowed, Remaining: remaining, Never: true, ResetAfter: reset}
	}
	return d
}

// fromLine reads a decision from an example's JSON line of one request.
func fromLine(t *testing.T, ln line) decision {
	t.Helper()
	if ln.Error != "" || len(ln.Decisions) != 1 || ln.Decisions[0].Remaining == nil {
		t.Fatalf("not one decision: %+v", ln)
	}
	l := ln.Decisions[0]
	allowed := string(l.Allowed)
	if allowed != "1" && allowed != "0" {
		t.Fatalf("allowed is %s: %+v", allowed, ln)
	}
	ms := func(raw json.RawMessage) (time.Duration, bool) {
		if string(raw) == `"never"` {
			return 0, true
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("duration %s: %v", raw, err)
		}
		return time.Duration(f * float64(time.Millisecond)), false
	}
	d := decision{Allowed: allowed == "1", Remaining: *l.Remaining}
	d.RetryAfter, d.Never = ms(l.RetryAfter)
	if reset, never := ms(l.ResetAfter); never {
		t.Fatalf("reset_after is never: %+v", l)
	} else {
		d.ResetAfter = reset
	}
	return d
}

// same compares decisions: allowed, remaining and never exactly, the
// durations within tol. Both sides use the server's clock, on their own
// keys, one after the other: a wait counts from a key's first call, so the
// two differ by at most the time the calls of either side took (which tol,
// the wall time of both, covers) and 1 ms of rounding up each.
func same(got, want decision, tol time.Duration) bool {
	near := func(a, b time.Duration) bool { return a-b <= tol && b-a <= tol }
	return got.Allowed == want.Allowed && got.Remaining == want.Remaining && got.Never == want.Never &&
		near(got.RetryAfter, want.RetryAfter) && near(got.ResetAfter, want.ResetAfter)
}

func client(t *testing.T) (*redis.Client, string) {
	t.Helper()
	addr := redisserver.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb, addr
}

// stats reads calls and failed_calls per command from INFO commandstats.
func stats(t *testing.T, rdb *redis.Client) map[string][2]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, fields, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "cmdstat_"), ":")
		if !ok {
			continue
		}
		var v [2]int
		for _, f := range strings.Split(fields, ",") {
			k, n, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				v[0], _ = strconv.Atoi(n)
			case "failed_calls":
				v[1], _ = strconv.Atoi(n)
			}
		}
		out[name] = v
	}
	return out
}

func delta(before, after map[string][2]int, names ...string) map[string][2]int {
	d := map[string][2]int{}
	for _, n := range names {
		d[n] = [2]int{after[n][0] - before[n][0], after[n][1] - before[n][1]}
	}
	return d
}

// TestDecisions runs each example's CLI for 5 calls of 3 per hour, then one
// call that costs more than the limit holds, with GCRA and the token
// bucket, through EVALSHA and through FCALL, and holds every decision to
// the Go bindings' for the same calls on a key of their own. Before each
// run the server loses the scripts (SCRIPT FLUSH) or the library (FUNCTION
// DELETE), so the examples' fallbacks run: EVAL on NOSCRIPT, FUNCTION LOAD
// when the function is not found.
func TestDecisions(t *testing.T) {
	rdb, addr := client(t)
	ctx := context.Background()
	fc := bindings.WithFunctions(rdb)
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			for _, via := range []string{"evalsha", "fcall"} {
				for _, a := range algos {
					t.Run(via+"/"+a.script, func(t *testing.T) {
						var goSide redis.Scripter = rdb
						watch := []string{"eval", "evalsha"}
						if via == "fcall" {
							goSide = fc
							watch = []string{"fcall", "function|load"}
							if err := rdb.FunctionDelete(ctx, "redlimit").Err(); err != nil && !strings.Contains(err.Error(), "not found") {
								t.Fatal(err)
							}
						} else if err := rdb.ScriptFlush(ctx).Err(); err != nil {
							t.Fatal(err)
						}
						key := fmt.Sprintf("poly:{%s-%s-%s}", l.name, via, a.script)
						goKey := key + ":go"
						steps := []struct {
							cost, calls int64
						}{{1, 5}, {4, 1}}
						// A wait counts from the key's first call, so the two
						// sides differ by at most the time since the first step.
						start := time.Now()
						for i, step := range steps {
							before := stats(t, rdb)
							args := append([]string{"--redis", addr, "--via", via, "--json", "--calls", fmt.Sprint(step.calls), a.script, key}, a.args...)
							r := cli(t, prog, append(args, fmt.Sprintf("requests=%d", step.cost))...)
							if r.code != 0 || int64(len(r.lines)) != step.calls {
								t.Fatalf("%s %s: want %d decisions:\n%s", l.name, strings.Join(args, " "), step.calls, r)
							}
							after := stats(t, rdb)
							var want []decision
							for range step.calls {
								d, err := a.call(ctx, goSide, goKey, step.cost)
								if err != nil {
									t.Fatal(err)
								}
								want = append(want, d)
							}
							tol := time.Since(start) + 2*time.Millisecond
							for j, ln := range r.lines {
								if ln.Script != a.script || ln.Via != via || ln.Call != j+1 {
									t.Errorf("line %d names %s/%s call %d", j+1, ln.Script, ln.Via, ln.Call)
								}
								if got := fromLine(t, ln); !same(got, want[j], tol) {
									t.Errorf("cost %d, call %d: %s says %+v, Go says %+v (durations within %v)", step.cost, j+1, l.name, got, want[j], tol)
								}
							}
							if i == 0 {
								// The first call met an empty cache or no library, and
								// every call sent the manifest's command.
								n := int(step.calls)
								wantStats := map[string][2]int{"eval": {1, 0}, "evalsha": {n, 1}}
								if via == "fcall" {
									wantStats = map[string][2]int{"fcall": {n + 1, 1}, "function|load": {1, 0}}
								}
								if diff := cmp.Diff(wantStats, delta(before, after, watch...)); diff != "" {
									t.Errorf("commands the %s run sent, [calls failed] (-want +got):\n%s", l.name, diff)
								}
							}
						}
						// The example's key holds the script's own state, as Go's does:
						// the bindings read it without BADSTATE and peek alike.
						got, err := a.call(ctx, rdb, key, 0)
						if err != nil {
							t.Fatalf("peek at the %s key: %v", l.name, err)
						}
						want, err := a.call(ctx, rdb, goKey, 0)
						if err != nil {
							t.Fatal(err)
						}
						if got.Allowed || got.Remaining != 0 || got.Allowed != want.Allowed || got.Remaining != want.Remaining {
							t.Errorf("peek: %s key %+v, Go key %+v", l.name, got, want)
						}
						if via == "fcall" {
							if err := bindings.CheckFunctions(ctx, rdb); err != nil {
								t.Errorf("the library %s loaded is not bindings/redlimit.functions.lua: %v", l.name, err)
							}
						}
					})
				}
			}
		})
	}
}

// TestBatch: a call of several requests, from each example's CLI, answers
// each request as the Go bindings' same batch does: gcra's take all and
// take at_most, the token bucket, a peek and a cost above the limit among
// them.
func TestBatch(t *testing.T) {
	rdb, addr := client(t)
	ctx := context.Background()
	type batch struct {
		script string
		args   []string
		call   func(key string) ([]int64, error)
	}
	costs := []int64{1, 2, 0, 4, 1}
	flat := func(allowed, remaining int64, retry, reset time.Duration) []int64 {
		return []int64{allowed, remaining, retry.Milliseconds(), reset.Milliseconds()}
	}
	batches := []batch{
		{"gcra", []string{"burst=3", "rate=3", "period=1h", "take=all"}, func(key string) ([]int64, error) {
			p := bindings.GCRAParams{Burst: 3, Rate: 3, Period: time.Hour, Take: bindings.GCRATakeAll}
			for _, c := range costs {
				p.Requests = append(p.Requests, bindings.GCRARequest{Cost: c})
			}
			r, err := bindings.GCRA(ctx, rdb, []string{key}, p)
			var out []int64
			for _, d := range r.Decisions {
				out = append(out, flat(d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)...)
			}
			return out, err
		}},
		{"gcra", []string{"burst=3", "rate=3", "period=1h", "take=at_most"}, func(key string) ([]int64, error) {
			p := bindings.GCRAParams{Burst: 3, Rate: 3, Period: time.Hour, Take: bindings.GCRATakeAtMost}
			for _, c := range costs {
				p.Requests = append(p.Requests, bindings.GCRARequest{Cost: c})
			}
			r, err := bindings.GCRA(ctx, rdb, []string{key}, p)
			var out []int64
			for _, d := range r.Decisions {
				out = append(out, flat(d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)...)
			}
			return out, err
		}},
		{"token_bucket", []string{"capacity=3", "rate=3", "period=1h", "refill=smooth"}, func(key string) ([]int64, error) {
			p := bindings.TokenBucketParams{Capacity: 3, Rate: 3, Period: time.Hour, Refill: bindings.TokenBucketRefillSmooth}
			for _, c := range costs {
				p.Requests = append(p.Requests, bindings.TokenBucketRequest{Cost: c})
			}
			r, err := bindings.TokenBucket(ctx, rdb, []string{key}, p)
			var out []int64
			for _, d := range r.Decisions {
				out = append(out, flat(d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)...)
			}
			return out, err
		}},
	}
	var list []string
	for _, c := range costs {
		list = append(list, fmt.Sprint(c))
	}
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			for i, b := range batches {
				key := fmt.Sprintf("poly:{batch-%s-%d}", l.name, i)
				r := cli(t, prog, append(append([]string{"--redis", addr, "--json", "--calls", "1", b.script, key}, b.args...), "requests="+strings.Join(list, ","))...)
				if r.code != 0 || len(r.lines) != 1 || len(r.lines[0].Decisions) != len(costs) {
					t.Fatalf("%s %v: want one line of %d decisions:\n%s", b.script, b.args, len(costs), r)
				}
				want, err := b.call(key + ":go")
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, d := range r.lines[0].Decisions {
					var allowed, retry, reset int64
					if err := json.Unmarshal(d.Allowed, &allowed); err != nil {
						t.Fatalf("allowed %s: %v", d.Allowed, err)
					}
					if string(d.RetryAfter) == `"never"` {
						retry = -1
					} else if err := json.Unmarshal(d.RetryAfter, &retry); err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal(d.ResetAfter, &reset); err != nil {
						t.Fatal(err)
					}
					got = append(got, allowed, *d.Remaining, retry, reset)
				}
				// Within an hour's limit, a few ms between the two calls
				// change no number but the waits by a few ms: compare
				// allowed and remaining exactly.
				for j := 0; j < len(costs); j++ {
					if got[4*j] != want[4*j] || got[4*j+1] != want[4*j+1] || (got[4*j+2] == -1) != (want[4*j+2] == -1) {
						t.Errorf("%s %v request %d (cost %d): %s says %v, Go %v", b.script, b.args, j+1, costs[j], l.name, got[4*j:4*j+4], want[4*j:4*j+4])
					}
				}
			}
		})
	}
}

// TestBadArgument: a caller clock an hour from the server's TIME, which
// only the script can tell, comes back as the script's BADARG error in
// both languages and both ways of calling; a limit the manifest's bounds
// refuse (burst=0) is refused before anything is sent. Neither creates the
// key.
func TestBadArgument(t *testing.T) {
	rdb, addr := client(t)
	ctx := context.Background()
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			for _, via := range []string{"evalsha", "fcall"} {
				t.Run(via, func(t *testing.T) {
					key := fmt.Sprintf("poly:{bad-%s-%s}", l.name, via)
					now, err := rdb.Time(ctx).Result()
					if err != nil {
						t.Fatal(err)
					}
					skewed := now.Add(-time.Hour).UnixMicro()
					r := cli(t, prog, "--redis", addr, "--via", via, "--json", "--calls", "1",
						"gcra", key, "burst=3", "rate=3", "period=1000", "take=all", "requests=1", fmt.Sprintf("now=%d", skewed))
					if r.code != 1 || len(r.lines) != 1 || r.lines[0].Error != "BADARG" || !strings.HasPrefix(r.lines[0].Message, "now must be") {
						t.Errorf("a clock an hour off: want exit 1 and the script's BADARG about now:\n%s", r)
					}
					if !strings.Contains(r.stderr, "BADARG") {
						t.Errorf("stderr does not name BADARG:\n%s", r)
					}

					before := stats(t, rdb)
					r = cli(t, prog, "--redis", addr, "--via", via, "--json", "--calls", "1",
						"gcra", key, "burst=0", "rate=3", "period=1000", "take=all", "requests=1")
					if r.code != 2 || len(r.lines) != 1 || r.lines[0].Error != "ArgError" || !strings.Contains(r.lines[0].Message, "burst") {
						t.Errorf("burst=0: want exit 2 and an ArgError about burst:\n%s", r)
					}
					if diff := cmp.Diff(map[string][2]int{"eval": {}, "evalsha": {}, "fcall": {}},
						delta(before, stats(t, rdb), "eval", "evalsha", "fcall")); diff != "" {
						t.Errorf("burst=0 sent a script call (-want +got):\n%s", diff)
					}
					if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
						t.Errorf("EXISTS %s = %d, %v; a refused call must create nothing", key, n, err)
					}
				})
			}
		})
	}
}

// TestDemo runs each CLI as the README shows, without arguments: GCRA and
// the token bucket at 3 per hour, 5 calls each.
func TestDemo(t *testing.T) {
	_, addr := client(t)
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			for _, via := range []string{"evalsha", "fcall"} {
				args := []string{"--redis", addr, "--via", via}
				if via == "fcall" {
					args = append(args, "--load-functions") // FUNCTION LOAD REPLACE first
				}
				r := cli(t, prog, args...)
				if r.code != 0 {
					t.Fatalf("--via %s:\n%s", via, r)
				}
				var got []string
				for _, s := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					f := strings.Fields(s)
					allowed := regexp.MustCompile(`allowed=(\S+)`).FindStringSubmatch(s)
					if len(f) < 4 || allowed == nil {
						t.Fatalf("--via %s: line %q", via, s)
					}
					got = append(got, f[0]+" allowed="+allowed[1])
				}
				var want []string
				for _, s := range []string{"gcra", "token_bucket"} {
					want = append(want, s+" allowed=1", s+" allowed=1", s+" allowed=1", s+" allowed=0", s+" allowed=0")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("--via %s (-want +got):\n%s\n%s", via, diff, r)
				}
			}
		})
	}
}

// TestStaleLibrary: where the server holds other code under the library's
// name, a call does not replace it (FunctionsStaleError, the code left as
// it was); --load-functions, FUNCTION LOAD REPLACE, does.
func TestStaleLibrary(t *testing.T) {
	rdb, addr := client(t)
	ctx := context.Background()
	const other = "#!lua name=redlimit\nredis.register_function('redlimit_other', function() return 1 end)"
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			prog := l.cli(t)
			if err := rdb.FunctionLoadReplace(ctx, other).Err(); err != nil {
				t.Fatal(err)
			}
			call := []string{"--redis", addr, "--via", "fcall", "--json", "--calls", "1", "gcra", "poly:{stale-" + l.name + "}", "burst=3", "rate=3", "period=1000", "take=all", "requests=1"}
			r := cli(t, prog, call...)
			if r.code != 1 || len(r.lines) != 1 || r.lines[0].Error != "FunctionsStaleError" {
				t.Errorf("a stale library: want exit 1 and FunctionsStaleError:\n%s", r)
			}
			libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "redlimit", WithCode: true}).Result()
			if err != nil || len(libs) != 1 || libs[0].Code != other {
				t.Errorf("the other library was changed: %+v, %v", libs, err)
			}
			r = cli(t, prog, append([]string{"--load-functions"}, call...)...)
			if r.code != 0 || len(r.lines) != 1 || len(r.lines[0].Decisions) != 1 || string(r.lines[0].Decisions[0].Allowed) != "1" {
				t.Errorf("--load-functions: want one allowed decision:\n%s", r)
			}
			if err := bindings.CheckFunctions(ctx, rdb); err != nil {
				t.Errorf("after --load-functions: %v", err)
			}
		})
	}
}
