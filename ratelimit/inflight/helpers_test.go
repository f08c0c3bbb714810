package inflight_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

var (
	ctx = context.Background()
	t0  = testredis.T0
)

type frozen struct {
	*testredis.Frozen
	rdb *redis.Client
}

func newFrozen(t testing.TB) *frozen {
	f := testredis.NewFrozen(t)
	return &frozen{Frozen: f, rdb: f.RDB}
}

func exampleRedis() *redis.Client { return testredis.Example() }

func downClient(t testing.TB) *redis.Client { return testredis.Down(t) }

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func get(remoteAddr string, header ...string) *http.Request {
	r := httptest.NewRequest("GET", "/items", nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) httplimit.Problem {
	t.Helper()
	var p httplimit.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}
