package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// A partner's API takes at most 3 calls in any second, counted as they
// arrive, from every process that calls it: a sliding log of 3 per second
// and 200 ms, and a Transport that sends a call within 100 ms of its
// admission; the other 100 ms are for the way to the partner (generous for
// a busy test machine; docs/recipes.md sizes them). The first 3 go at once;
// the 4th waits until the 1st leaves the log.
func ExampleNewTransport() {
	m, _ := miniredis.Run() // its clock is the wall clock here: the 4th call waits
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	limiter, _ := ratelimit.New(rdb, "partner-api",
		ratelimit.Limit{Rate: 3, Period: time.Second + 200*time.Millisecond, Burst: 3},
		ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))

	partner := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer partner.Close()
	oneKey := func(*http.Request) (string, error) { return "partner", nil }
	client := &http.Client{
		Transport: httplimit.NewTransport(http.DefaultTransport, limiter, oneKey, 100*time.Millisecond),
		Timeout:   10 * time.Second,
	}

	start := time.Now()
	for call := 1; call <= 4; call++ {
		resp, err := client.Get(partner.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("call %d at %.0f s: %d\n", call, time.Since(start).Seconds(), resp.StatusCode)
	}
	// Output:
	// call 1 at 0 s: 200
	// call 2 at 0 s: 200
	// call 3 at 0 s: 200
	// call 4 at 1 s: 200
}
