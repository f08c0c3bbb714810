package chilimit_test

import (
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/redlimit/redlimit/adapters/chilimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// What the adapter costs a request, Redis aside: go test -bench Adapter.
func BenchmarkAdapter(b *testing.B) {
	app := func(mw ...func(http.Handler) http.Handler) *chi.Mux {
		r := chi.NewRouter()
		r.Use(mw...)
		r.Get("/users/{id}", text("user"))
		return r
	}
	adaptertest.Bench(b, app(), app(chilimit.Middleware(adaptertest.Fixed, httplimit.ByRoute(httplimit.ByClientIP()))))
}
