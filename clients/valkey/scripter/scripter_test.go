// Code generated from clients/rueidis/scripter/scripter_test.go by clients/valkey/internal/samesource (go test -update). DO NOT EDIT.

package scripter_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/redlimit/redlimit/clients/valkey/scripter"
	"github.com/redlimit/redlimit/internal/scriptingtest"
	"github.com/redlimit/redlimit/ratelimit"
)

// TestScripter runs the suite every client's redis.Scripter passes (see
// internal/scriptingtest) over valkey-go, as a user opens it.
func TestScripter(t *testing.T) {
	scriptingtest.Run(t, func(t testing.TB, addrs []string) ratelimit.Client {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return scripter.New(c)
	})
}
