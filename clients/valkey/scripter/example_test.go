// Code generated from clients/rueidis/scripter/example_test.go by clients/valkey/internal/samesource (go test -update). DO NOT EDIT.

package scripter_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/redlimit/redlimit/clients/valkey/scripter"
	"github.com/redlimit/redlimit/ratelimit"
)

// A limiter over valkey-go: the client pipelines concurrent decisions on
// shared connections. (miniredis stands in for Redis here; it has no
// client-side caching, hence DisableCache.)
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	limiter, err := ratelimit.New(scripter.New(client), "api", ratelimit.PerMinute(2))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}
