// Package fiberlimit limits Fiber (v3) routes with any ratelimit.Rule, as
// httplimit.Middleware limits net/http handlers: the same options, key
// functions, RateLimit header fields, 429 and problem bodies, and error
// handling, as a fiber.Handler.
//
//	import "github.com/redlimit/redlimit/adapters/fiberlimit"
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err)
//	}
//	app := fiber.New()
//	app.Use(fiberlimit.Middleware(limiter, httplimit.ByClientIP()))
//	perRoute := fiberlimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP()))
//	app.Get("/users/:id", perRoute, users)
//
// Fiber is built on fasthttp, not net/http: the key functions see an
// *http.Request converted from the fasthttp request (its method, URL,
// headers and RemoteAddr, as Fiber's adaptor makes it), and the
// middleware's fields and bodies are copied to Fiber's response.
//
// Routes: Fiber runs its handlers as one stack of routes, so the route a
// request ends at is not known in a middleware registered with app.Use or
// a group: there, httplimit.ByRoute fails with httplimit.ErrNoRoute (a
// 500) rather than key by the Use prefix or the path. Put a per-route
// limiter in the route's own handlers, as above, where c.FullPath() is the
// route's pattern.
package fiberlimit

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// Middleware limits the Fiber routes it is registered on as
// httplimit.Middleware(rule, key, opts...) limits an http.Handler; see
// there for what a denied or undecidable request gets. Registered in a
// route's own handlers, the key function's request carries the route's
// pattern (httplimit.Route); under app.Use or a group's Use it carries
// none. A denied request does not reach c.Next(). With
// httplimit.WithCountIf, an error the next handlers return goes through
// the app's ErrorHandler at once, so that its status (401 for
// fiber.ErrUnauthorized) is the one counted, and Middleware returns nil.
func Middleware(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) fiber.Handler {
	limit := httplimit.Middleware(rule, key, opts...)(http.HandlerFunc(serveNext))
	return func(c fiber.Ctx) error {
		r, err := adaptor.ConvertRequest(c, true)
		if err != nil {
			return fmt.Errorf("fiberlimit: %w", err)
		}
		r = r.WithContext(c.Context())
		if route := pattern(c); route != "" {
			r = httplimit.SetRoute(r, route)
		}
		s := &state{c: c}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, s))
		w := &writer{c: c, s: s, header: http.Header{}}
		limit.ServeHTTP(w, r)
		return s.err
	}
}

// Key turns a key function of the fiber.Ctx, such as one that reads the
// user an authenticating middleware stored with c.Locals, into an
// httplimit.KeyFunc for Middleware, to use alone or inside
// httplimit.ByRoute and httplimit.FirstOf. Outside Middleware it fails
// with ratelimit.ErrInvalid.
func Key(key func(c fiber.Ctx) (string, error)) httplimit.KeyFunc {
	return func(r *http.Request) (string, error) {
		s, ok := r.Context().Value(stateKey{}).(*state)
		if !ok {
			return "", fmt.Errorf("%w: fiberlimit.Key used outside fiberlimit.Middleware", ratelimit.ErrInvalid)
		}
		return key(s.c)
	}
}

// pattern is the pattern of the route whose handlers run, or "" when
// they are a middleware's registered with Use (whose Path is a prefix).
// Fiber says which only in an unexported field of Route, read here by
// reflection; should a Fiber release drop it, pattern says "" and ByRoute
// fails loudly, as TestSuite would.
func pattern(c fiber.Ctx) string {
	route := c.Route()
	if useField == nil || route == nil || route.Path == "" || len(route.Handlers) == 0 {
		return "" // no route, or Fiber's stand-in for one (its error handler's)
	}
	if reflect.ValueOf(route).Elem().FieldByIndex(useField).Bool() {
		return ""
	}
	return route.Path
}

// useField locates fiber.Route's use flag (true for a Use route).
var useField = func() []int {
	f, ok := reflect.TypeOf(fiber.Route{}).FieldByName("use")
	if !ok || f.Type.Kind() != reflect.Bool {
		return nil
	}
	return f.Index
}()

type stateKey struct{}

// state carries Fiber's context through httplimit's middleware to the
// handler it calls when the request passes, and c.Next()'s error back.
type state struct {
	c    fiber.Ctx
	next bool // the handlers after Middleware ran: Fiber's response is theirs
	err  error
}

// serveNext is the handler httplimit's middleware calls for a request
// that passes: it copies the rate-limit fields to Fiber's response and
// runs the next handlers.
func serveNext(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(stateKey{}).(*state)
	c := s.c
	copyHeader(c, w.Header())
	s.next = true
	if _, ok := w.(*writer); ok {
		s.err = c.Next()
		return
	}
	// httplimit wrapped the writer to learn the status (WithCountIf). An
	// error is the status the app's ErrorHandler gives it: let it write
	// that now, then hand the status on. The writer takes no more writes,
	// but Fiber sends the response only once the handlers return, so the
	// fields of the count replace those of the peek.
	if err := c.Next(); err != nil {
		if herr := c.App().Config().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	peeked := make([]string, 0, len(w.Header()))
	for k := range w.Header() {
		peeked = append(peeked, k)
	}
	w.WriteHeader(c.Response().StatusCode())
	for _, k := range peeked {
		c.Response().Header.Del(k)
	}
	copyHeader(c, w.Header())
}

// writer is the http.ResponseWriter httplimit's middleware writes a
// denial or an error to: it goes to Fiber's response.
type writer struct {
	c      fiber.Ctx
	s      *state
	header http.Header
	wrote  bool
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	if w.s.next || w.wrote {
		return // the status is the handlers', or set already
	}
	w.wrote = true
	copyHeader(w.c, w.header)
	w.c.Status(code)
}

func (w *writer) Write(b []byte) (int, error) {
	if w.s.next {
		return len(b), nil
	}
	w.WriteHeader(http.StatusOK)
	w.c.Response().AppendBody(b)
	return len(b), nil
}

func copyHeader(c fiber.Ctx, h http.Header) {
	for k, vs := range h {
		c.Response().Header.Del(k)
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
}
