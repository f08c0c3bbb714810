// Command scriptcost drives the calls whose cost inside redis-server
// bench/scriptcost.sh counts with callgrind (instructions, not time: a busy
// machine does not move them): for each shape, -calls commands that decide
// -per requests on fresh keys, each shape framed by callgrind_control -z
// before and -d <shape> after, so each dump holds that shape alone.
//
//	alone   one call of the script per request, -per of them pipelined
//	form    one call of the script's multi-key form holding -per calls
//	itself  the same layout sent to the script itself (the scripts with
//	        @multi itself)
//	joined  one call of the script on -per keys, one request each (gcra.lua,
//	        token_bucket.lua)
//	hot     one call of the script on one key, -per requests (the same two);
//	        for the scripts with @multi itself, itself's layout with every
//	        call on one key (a hot key's batch)
//	mixed   itself's layout, every other call on one key and the rest on
//	        keys of their own, in that order (a hot key among calm ones,
//	        as they arrive)
//	grouped the calls of mixed with the hot key's together, as the send
//	        stage orders them (multikey's form)
//	envoy   no script: what envoyproxy/ratelimit sends for a fixed-window
//	        descriptor, INCRBY and EXPIRE, for each of -per requests,
//	        pipelined (docs/envoy.md sets it beside the scripts)
//
// The script is -file (any bundled script but multi.lua and
// concurrency.lua, of any version: git show REV:lua/gcra.lua > old.lua),
// under -take; form is
// the bundled script's form (bindings.MultiKeyForm), whatever -file is.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the redis-server under callgrind")
	file := flag.String("file", "../lua/gcra.lua", "the script: any bundled one but multi.lua and concurrency.lua")
	shapes := flag.String("shapes", "alone,form,joined,hot", "the shapes, in turn")
	take := flag.String("take", "all", "the word: gcra's take (all), token_bucket's refill (smooth)")
	calls := flag.Int("calls", 100, "commands per shape")
	per := flag.Int("per", 32, "requests per command")
	mark := flag.Bool("callgrind", true, "frame each shape with callgrind_control -z and -d")
	flag.Parse()
	src, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, ReadTimeout: -1, MaxRetries: -1})
	defer rdb.Close()
	script := redis.NewScript(string(src))
	if err := script.Load(ctx, rdb).Err(); err != nil {
		log.Fatal(err)
	}
	// The form is the bundled script's, named in the file's name. limit
	// is the ARGV before gcra's and token_bucket's requests; one, a call's
	// whole ARGV. 100 calls of one fit on a key.
	var bundled *redis.Script
	limit := []any{100, 10, 1000, 0, *take}
	one := append(limit[:len(limit):len(limit)], 1, 0)
	switch base := (*file)[strings.LastIndex(*file, "/")+1:]; {
	case strings.Contains(base, "token_bucket"):
		bundled = bindings.TokenBucketScript
	case strings.Contains(base, "gcra"):
		bundled = bindings.GCRAScript
	case strings.Contains(base, "fixed_window"):
		bundled, limit, one = bindings.FixedWindowScript, nil, []any{100, 1000, 1, 0, 0}
	case strings.Contains(base, "sliding_window_counter"):
		bundled, limit, one = bindings.SlidingWindowCounterScript, nil, []any{100, 1000, 1, 0, 0}
	case strings.Contains(base, "sliding_window_log"):
		bundled, limit, one = bindings.SlidingWindowLogScript, nil, []any{100, 1000, 1, 0, 0}
	case strings.Contains(base, "leaky_bucket"):
		bundled, limit, one = bindings.LeakyBucketScript, nil, []any{100, 10, 1000, 1, 0, 0}
	default:
		log.Fatalf("%s: scriptcost knows gcra.lua, token_bucket.lua, fixed_window.lua, sliding_window_counter.lua, sliding_window_log.lua and leaky_bucket.lua (a file whose name holds one of those names)", *file)
	}
	form := bindings.MultiKeyForm(bundled.Hash())
	if err := form.Load(ctx, rdb).Err(); err != nil {
		log.Fatal(err)
	}
	for _, shape := range strings.Split(*shapes, ",") {
		if *mark {
			run("callgrind_control", "-z")
		}
		for i := 0; i < *calls; i++ {
			key := func(j int) string { return fmt.Sprintf("%s:%d:%d", shape, i, j) }
			var err error
			switch shape {
			case "alone":
				_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := 0; j < *per; j++ {
						p.EvalSha(ctx, script.Hash(), []string{key(j)}, one...)
					}
					return nil
				})
			case "envoy":
				_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := 0; j < *per; j++ {
						p.IncrBy(ctx, key(j), 1)
						p.Expire(ctx, key(j), time.Hour)
					}
					return nil
				})
			case "form", "itself":
				keys, args := make([]string, *per), []any{}
				for j := range keys {
					keys[j] = key(j)
					args = append(append(args, 1, len(one)), one...)
				}
				to := form
				if shape == "itself" {
					to = script
				}
				err = to.EvalSha(ctx, rdb, keys, args...).Err()
			case "hot", "joined":
				if limit != nil {
					keys, args := make([]string, *per), append([]any(nil), limit...)
					for j := range keys {
						keys[j] = key(j)
						args = append(args, 1, 0)
					}
					if shape == "hot" {
						keys = keys[:1]
					}
					err = script.EvalSha(ctx, rdb, keys, args...).Err()
					break
				}
				if shape == "joined" {
					log.Fatalf("%s: %s takes no requests of its own", shape, *file)
				}
				// A hot key's batch in the layout the script takes itself.
				keys, args := make([]string, *per), []any{}
				for j := range keys {
					keys[j] = key(0)
					args = append(append(args, 1, len(one)), one...)
				}
				err = script.EvalSha(ctx, rdb, keys, args...).Err()
			case "mixed", "grouped":
				if limit != nil {
					log.Fatalf("%s: %s does not take the form's layout itself", shape, *file)
				}
				var hot, calm []string
				args := []any{}
				for j := 0; j < *per; j++ {
					if j%2 == 0 {
						hot = append(hot, key(0))
					} else {
						calm = append(calm, key(j))
					}
					args = append(append(args, 1, len(one)), one...)
				}
				keys := append(hot, calm...) // grouped: the stage's order
				if shape == "mixed" {
					keys = keys[:0:0]
					for j := range hot {
						keys = append(keys, hot[j])
						if j < len(calm) {
							keys = append(keys, calm[j])
						}
					}
				}
				err = script.EvalSha(ctx, rdb, keys, args...).Err()
			default:
				log.Fatalf("unknown shape %q", shape)
			}
			if err != nil {
				log.Fatalf("%s: %v", shape, err)
			}
		}
		if *mark {
			run("callgrind_control", "-d", shape)
		}
		fmt.Printf("SHAPE %s decisions=%d\n", shape, *calls**per)
	}
}

func run(name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		log.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}
