package scripter_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/redlimit/redlimit/clients/rueidis/scripter"
	"github.com/redlimit/redlimit/internal/scriptingtest"
	"github.com/redlimit/redlimit/ratelimit"
)

// TestScripter runs the suite every client's redis.Scripter passes (see
// internal/scriptingtest) over rueidis, as a user opens it.
func TestScripter(t *testing.T) {
	scriptingtest.Run(t, func(t testing.TB, addrs []string) ratelimit.Client {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return scripter.New(c)
	})
}
