package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	ulimiter "github.com/ulule/limiter/v3"
	ulstdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulule "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/redlimit/redlimit/bench/internal/wrk"
	rueidisscripter "github.com/redlimit/redlimit/clients/rueidis/scripter"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var (
	httpRounds   = flag.Int("http.rounds", 6, "rounds of TestHTTP: each runs every row once, in a random order")
	httpDuration = flag.Duration("http.duration", 5*time.Second, "how long wrk drives each row in a round")
	httpRun      = flag.String("http.run", "", "run only the HTTP rows whose name matches this regexp")
)

// The HTTP tier's loads, from wrk's 64 connections. In allow, every
// request comes from one client address, so counts against one key, at a
// limit far above what the machine can send (every request passes and
// writes); in deny, the same at 100 a second, so nearly every request is
// denied with a 429. The "_ips" rows are allow from 100 000 client
// addresses: wrk runs testdata/distinct_ips.lua, which sends every request
// with an X-Forwarded-For of an address of its own, as a proxy on
// loopback records it, and each limiter trusts that proxy.
var (
	httpAllow = ratelimit.PerSecond(1_000_000)
	httpDeny  = ratelimit.PerSecond(100)
)

// distinctIPsScript is the wrk script of the "_ips" rows.
const distinctIPsScript = "testdata/distinct_ips.lua"

// loopback is the trusted proxy of the "_ips" rows: wrk's address.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// httpRow is a hello-world handler behind one limiter (or none): what a
// user of each library writes, each as its documentation shows.
type httpRow struct {
	name string
	wrap func(http.Handler) http.Handler
}

// ips says whether a row is driven from 100 000 client addresses.
func (r httpRow) ips() bool { return strings.Contains(r.name, "_ips") }

func httpRows(t *testing.T) []httpRow {
	c, _ := newClient(t)
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ap.Close() })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)

	// The "_ips" rows trust the proxy on loopback (wrk) to name the client
	// in X-Forwarded-For; the others key by the peer's address.
	ours := func(name string, s ratelimit.Client, limit ratelimit.Limit, opts ...ratelimit.Option) httpRow {
		l, err := ratelimit.New(s, "http-"+name, limit, opts...)
		if err != nil {
			t.Fatal(err)
		}
		key := httplimit.ByClientIP()
		if (httpRow{name: name}).ips() {
			key = httplimit.ByClientIP(loopback)
		}
		return httpRow{name, httplimit.Middleware(l, key)}
	}
	ululeRow := func(name string, limit ratelimit.Limit) httpRow {
		store, err := ulule.NewStoreWithOptions(c, ulimiter.StoreOptions{Prefix: "http-" + name})
		if err != nil {
			t.Fatal(err)
		}
		// ulule has no list of trusted proxies: it reads X-Forwarded-For
		// from any peer, or never.
		trust := (httpRow{name: name}).ips()
		l := ulimiter.New(store, ulimiter.Rate{Period: limit.Period, Limit: limit.Burst}, ulimiter.WithTrustForwardHeader(trust))
		return httpRow{name, ulstdlib.NewMiddleware(l).Handler}
	}
	return []httpRow{
		{"bare", func(h http.Handler) http.Handler { return h }},
		ululeRow("ulule", httpAllow),
		ours("redlimit", c, httpAllow),
		ours("redlimit_ap", ap, httpAllow),
		ours("redlimit_rueidis", rueidisscripter.New(rc), httpAllow),
		ululeRow("ulule_deny", httpDeny),
		ours("redlimit_deny", c, httpDeny),
		ours("redlimit_cache_deny", c, httpDeny, ratelimit.WithDenyCache(denyCacheSize)),
		{"bare_ips", func(h http.Handler) http.Handler { return h }},
		ululeRow("ulule_ips", httpAllow),
		ours("redlimit_ips", c, httpAllow),
		ours("redlimit_ips_nobatch", c, httpAllow, withoutCoalescing...),
	}
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("hello, world\n"))
})

// TestHTTP is the HTTP tier of make bench: each row's handler served on
// loopback and driven by wrk (64 connections, 2 threads) for
// -http.duration, every row once a round in a random order, for
// -http.rounds rounds. Each run prints one line for cmd/benchtable:
//
//	HTTP row=NAME round=N rps=R p50-us=A p99-us=B srv-cpu-us/req=C requests=N non2xx=M
//
// srv-cpu-us/req is the redis-server's CPU (INFO cpu) over the run divided
// by the requests wrk completed. A row whose run fails (no wrk, a
// non-2xx answer where every request must pass) fails the test, and so
// does an "_ips" limiter row that did not key by the forwarded address
// (fewer keys made than half its requests, up to 100 000).
func TestHTTP(t *testing.T) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		t.Fatal("TestHTTP needs wrk on PATH (apt-get install -y wrk)")
	}
	ctx := context.Background()
	c, _ := newClient(t)
	rows := httpRows(t)
	if *httpRun != "" {
		re, err := regexp.Compile(*httpRun)
		if err != nil {
			t.Fatal(err)
		}
		rows = slices.DeleteFunc(rows, func(r httpRow) bool { return !re.MatchString(r.name) })
	}
	for round := 1; round <= *httpRounds; round++ {
		for _, i := range rand.Perm(len(rows)) {
			row := rows[i]
			expect("http", "row", row.name)
			url, stop := serve(t, row.wrap(hello))
			script := ""
			if row.ips() {
				script = distinctIPsScript
			}
			// A short run first, so that no row pays for dialling, loading
			// its script or growing its pools.
			if _, err := runWrk(bin, url, script, time.Second); err != nil {
				t.Fatalf("%s: %v", row.name, err)
			}
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			before, err := readStats(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			expired0, err := expiredKeys(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			res, err := runWrk(bin, url, script, *httpDuration)
			if err != nil {
				t.Fatalf("%s: %v", row.name, err)
			}
			after, err := readStats(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			stop()
			if row.ips() && !strings.HasPrefix(row.name, "bare") {
				// Every key made is still there or has expired (nothing
				// deletes them). One key per address: a limiter that keyed
				// by the proxy's address would make one.
				expired1, err := expiredKeys(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				n, err := c.DBSize(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				if made, want := n+expired1-expired0, min(res.Requests, distinctKeys)/2; made < want {
					t.Errorf("%s: %d keys made by %d requests from distinct addresses, want at least %d", row.name, made, res.Requests, want)
				}
			}
			if !strings.HasSuffix(row.name, "_deny") && res.Non2xx > 0 {
				t.Errorf("%s: %d of %d requests were not 2xx under a limit none of them reaches", row.name, res.Non2xx, res.Requests)
			}
			if strings.HasSuffix(row.name, "_deny") && res.Non2xx < res.Requests/2 {
				t.Errorf("%s: only %d of %d requests were denied at 100 a second", row.name, res.Non2xx, res.Requests)
			}
			cpu := (after.cpu - before.cpu) * 1e6 / float64(res.Requests)
			fmt.Printf("HTTP row=%s round=%d rps=%.1f p50-us=%.1f p99-us=%.1f srv-cpu-us/req=%.2f requests=%d non2xx=%d\n",
				row.name, round, res.RPS, float64(res.P50.Nanoseconds())/1e3, float64(res.P99.Nanoseconds())/1e3, cpu, res.Requests, res.Non2xx)
		}
	}
}

// serve serves h on a free loopback port until stop.
func serve(t *testing.T, h http.Handler) (url string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	return "http://" + l.Addr().String() + "/", func() { srv.Close() }
}

// runWrk drives url for d, with the wrk script at path script unless
// it is "".
func runWrk(bin, url, script string, d time.Duration) (wrk.Result, error) {
	args := []string{"-t2", "-c64", fmt.Sprintf("-d%ds", max(1, int(d.Seconds()))), "--latency"}
	if script != "" {
		args = append(args, "-s", script)
	}
	out, err := exec.Command(bin, append(args, url)...).CombinedOutput()
	if err != nil {
		return wrk.Result{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	r, err := wrk.Parse(string(out))
	if err == nil && r.SocketErrors > 0 {
		err = fmt.Errorf("wrk: %d socket errors (connect, read, write, timeout):\n%s", r.SocketErrors, out)
	}
	return r, err
}

// expiredKeys is the server's count of keys expired so far (INFO stats),
// which FLUSHALL does not reset.
func expiredKeys(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "expired_keys:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO stats has no expired_keys")
}
