// Command redlimit-demo puts each bundled limiter in front of an HTTP
// handler and sends it real requests: a burst, then a retry after the
// Retry-After the limiter answered. It runs on an embedded miniredis unless
// -redis names a real server.
//
//	go run ./cmd/redlimit-demo                    # embedded miniredis
//	go run ./cmd/redlimit-demo -redis 127.0.0.1:6379
//	go run ./cmd/redlimit-demo -listen 127.0.0.1:8080   # then keep serving
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// decision is what every bundled script answers.
type decision struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// limiter decides one request for key, at 5 requests per second.
type limiter struct {
	name   string
	decide func(ctx context.Context, c redis.Scripter, key string) (decision, error)
}

var limiters = []limiter{
	{"token_bucket", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.TokenBucket(ctx, c, key, bindings.TokenBucketParams{Capacity: 5, Rate: 5, Period: time.Second, Refill: "smooth", Cost: 1})
		return decision(r), err
	}},
	{"fixed_window", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.FixedWindow(ctx, c, key, bindings.FixedWindowParams{Limit: 5, Window: time.Second, Cost: 1})
		return decision(r), err
	}},
	{"sliding_window_log", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.SlidingWindowLog(ctx, c, key, bindings.SlidingWindowLogParams{Limit: 5, Window: time.Second, Cost: 1})
		return decision(r), err
	}},
	{"sliding_window_counter", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.SlidingWindowCounter(ctx, c, key, bindings.SlidingWindowCounterParams{Limit: 5, Window: time.Second, Cost: 1})
		return decision(r), err
	}},
	{"leaky_bucket", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.LeakyBucket(ctx, c, key, bindings.LeakyBucketParams{Capacity: 5, Rate: 5, Period: time.Second, Cost: 1})
		return decision(r), err
	}},
	{"gcra", func(ctx context.Context, c redis.Scripter, key string) (decision, error) {
		r, err := bindings.GCRA(ctx, c, key, bindings.GCRAParams{Burst: 5, Rate: 5, Period: time.Second, Cost: 1})
		return decision(r), err
	}},
}

func main() {
	redisAddr := flag.String("redis", "", "address of a real Redis (default: an embedded miniredis)")
	listen := flag.String("listen", "", "keep serving on this address after the run (e.g. 127.0.0.1:8080)")
	burst := flag.Int("burst", 8, "requests per limiter in the burst")
	flag.Parse()

	rdb, stop, err := connect(*redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if *listen != "" {
		ln, err = net.Listen("tcp", *listen)
	}
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: handler(rdb)}
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()

	if err := run(os.Stdout, base, *burst); err != nil {
		log.Fatal(err)
	}
	if *listen != "" {
		fmt.Printf("\nserving on %s/<limiter>?key=<client> — Ctrl-C to stop\n", base)
		select {}
	}
}

func connect(addr string) (*redis.Client, func(), error) {
	if addr == "" {
		m, err := miniredis.Run()
		if err != nil {
			return nil, nil, err
		}
		m.ClockTTL(true) // TTLs run on the wall clock, as on a real server
		addr = m.Addr()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		return rdb, func() { rdb.Close(); m.Close() }, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	return rdb, func() { rdb.Close() }, rdb.Ping(context.Background()).Err()
}

// handler serves /<limiter>?key=<client>: 200 when the limiter admits the
// request, 429 with Retry-After (whole seconds, rounded up, as HTTP wants)
// and X-Retry-After-Ms when it does not.
func handler(rdb redis.Scripter) http.Handler {
	mux := http.NewServeMux()
	for _, l := range limiters {
		l := l
		mux.HandleFunc("/"+l.name, func(w http.ResponseWriter, r *http.Request) {
			key := "demo:" + l.name + ":{" + r.URL.Query().Get("key") + "}"
			d, err := l.decide(r.Context(), rdb, key)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
			if !d.Allowed {
				secs := (d.RetryAfter + time.Second - 1) / time.Second
				w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
				w.Header().Set("X-Retry-After-Ms", strconv.FormatInt(d.RetryAfter.Milliseconds(), 10))
				http.Error(w, "rate limited", http.StatusTooManyRequests)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	return mux
}

// run sends each limiter a burst, waits the Retry-After of the first denial
// and tries once more, and prints what happened.
func run(out io.Writer, base string, burst int) error {
	fmt.Fprintf(out, "Each limiter allows 5 requests per second (burst 5). %d requests at once, then one more after the Retry-After:\n\n", burst)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "limiter\tburst: admitted\tdenied\tretry after\tthen\t")
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(url string) (*http.Response, error) {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	for _, l := range limiters {
		url := fmt.Sprintf("%s/%s?key=client-1", base, l.name)
		admitted, denied := 0, 0
		var retry time.Duration
		for i := 0; i < burst; i++ {
			resp, err := get(url)
			if err != nil {
				return err
			}
			switch resp.StatusCode {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
				denied++
				if retry == 0 {
					ms, _ := strconv.Atoi(resp.Header.Get("X-Retry-After-Ms"))
					retry = time.Duration(ms) * time.Millisecond
				}
			default:
				return fmt.Errorf("%s: %s", url, resp.Status)
			}
		}
		then := "-"
		if denied > 0 {
			time.Sleep(retry)
			resp, err := get(url)
			if err != nil {
				return err
			}
			then = resp.Status
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t\n", l.name, admitted, denied, retry, then)
	}
	return tw.Flush()
}
