// Code generated from adapters/echolimit/bench_test.go by adapters/echov4/echolimit/internal/samesource (go test -update). DO NOT EDIT.

package echolimit_test

import (
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redlimit/redlimit/adapters/echov4/echolimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// What the adapter costs a request, Redis aside: go test -bench Adapter.
func BenchmarkAdapter(b *testing.B) {
	app := func(mw ...echo.MiddlewareFunc) *echo.Echo {
		e := echo.New()
		e.Use(mw...)
		e.GET("/users/:id", func(c echo.Context) error { return c.String(200, "user") })
		return e
	}
	adaptertest.Bench(b, app(), app(echolimit.Middleware(adaptertest.Fixed, httplimit.ByRoute(httplimit.ByClientIP()))))
}
