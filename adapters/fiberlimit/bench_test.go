package fiberlimit_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/redlimit/redlimit/adapters/fiberlimit"
	"github.com/redlimit/redlimit/internal/adaptertest"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// What the adapter costs a request, Redis aside: go test -bench Adapter.
// Both sides go through Fiber's net/http adaptor, which costs more than
// either.
func BenchmarkAdapter(b *testing.B) {
	user := func(c fiber.Ctx) error { return c.SendString("user") }
	bare, limited := fiber.New(), fiber.New()
	bare.Get("/users/:id", user)
	limited.Get("/users/:id", fiberlimit.Middleware(adaptertest.Fixed, httplimit.ByRoute(httplimit.ByClientIP())), user)
	adaptertest.Bench(b, adaptor.FiberApp(bare), adaptor.FiberApp(limited))
}
