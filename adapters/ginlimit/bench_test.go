package ginlimit_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/redlimit/redlimit/adapters/ginlimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// What the adapter costs a request, Redis aside: go test -bench Adapter.
func BenchmarkAdapter(b *testing.B) {
	app := func(mw ...gin.HandlerFunc) *gin.Engine {
		r := gin.New()
		r.Use(mw...)
		r.GET("/users/:id", func(c *gin.Context) { c.String(200, "user") })
		return r
	}
	adaptertest.Bench(b, app(), app(ginlimit.Middleware(adaptertest.Fixed, httplimit.ByRoute(httplimit.ByClientIP()))))
}
