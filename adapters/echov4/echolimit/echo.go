// Package echo limits Echo v4 routes with any ratelimit.Rule, as
// httplimit.Middleware limits net/http handlers: the same options, key
// functions, RateLimit header fields, 429 and problem bodies, and error
// handling, as an echo.MiddlewareFunc. For Echo v5, use
// github.com/redlimit/redlimit/adapters/echo.
//
//	import echolimit "github.com/redlimit/redlimit/adapters/echov4/echolimit"
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err)
//	}
//	e := echo.New()
//	e.Use(echolimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
//
// httplimit.ByRoute keys by the route Echo matches (c.Path(), such as
// /users/:id), never by the URL path. Key reaches values on the
// echo.Context, such as a user an authenticating middleware set.
package echolimit

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// noRoute is the route of a request Echo matches no route for: all of
// them share it, so a client probing paths that do not exist is limited
// as one route, not one bucket per path.
const noRoute = "(no route)"

// Middleware limits the Echo routes it is used on (e.Use, e.Pre, a group's
// Use, or one route's middleware) as httplimit.Middleware(rule, key,
// opts...) limits an http.Handler; see there for what a denied or
// undecidable request gets. The key function sees c.Request() carrying the
// route Echo matches (httplimit.Route), or "(no route)" for a request that
// matches none, so httplimit.ByRoute counts each route apart; under e.Pre,
// before Echo routes, Middleware asks Echo's router itself. A denied
// request does not reach next. With httplimit.WithCountIf, an error next
// returns goes through c.Error (Echo's HTTPErrorHandler) at once, so that
// its status (401 for echo.ErrUnauthorized) is the one counted.
func Middleware(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) echo.MiddlewareFunc {
	limit := httplimit.Middleware(rule, key, opts...)(http.HandlerFunc(serveNext))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			s := &state{c: c, next: next}
			r := httplimit.SetRoute(c.Request(), route(c))
			r = r.WithContext(context.WithValue(r.Context(), stateKey{}, s))
			limit.ServeHTTP(&response{c.Response(), s}, r)
			return s.err
		}
	}
}

// route is the pattern of the route Echo matched for c, or, when it has
// not routed yet (e.Pre) or matched nothing, the one its router finds for
// the request as it stands.
func route(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	e, r := c.Echo(), c.Request()
	router := e.Router()
	if byHost := e.Routers()[r.Host]; byHost != nil {
		router = byHost
	}
	probe := e.NewContext(r, nil)
	router.Find(r.Method, echo.GetPath(r), probe)
	if p := probe.Path(); p != "" {
		return p
	}
	return noRoute
}

// Key turns a key function of the echo.Context, such as one that reads the
// user an authenticating middleware stored with c.Set, into an
// httplimit.KeyFunc for Middleware, to use alone or inside httplimit.ByRoute
// and httplimit.FirstOf. Outside Middleware it fails with
// ratelimit.ErrInvalid.
func Key(key func(c echo.Context) (string, error)) httplimit.KeyFunc {
	return func(r *http.Request) (string, error) {
		s, ok := r.Context().Value(stateKey{}).(*state)
		if !ok {
			return "", fmt.Errorf("%w: echolimit.Key used outside echolimit.Middleware", ratelimit.ErrInvalid)
		}
		return key(s.c)
	}
}

type stateKey struct{}

// state carries Echo's context and next handler through httplimit's
// middleware to the handler it calls when the request passes, and next's
// error back.
type state struct {
	c       echo.Context
	next    echo.HandlerFunc
	err     error
	handing bool // the status goes to httplimit from Echo's WriteHeader
}

// serveNext is the handler httplimit's middleware calls for a request
// that passes: it runs next.
func serveNext(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(stateKey{}).(*state)
	c := s.c
	c.SetRequest(r)
	if _, ok := w.(*response); ok {
		s.err = s.next(c)
		return
	}
	// httplimit wrapped the writer to learn the status (WithCountIf), but
	// Echo's handlers write to c.Response(): hand the status on just before
	// Echo sends it (so the count's fields go out), or once next returns.
	// An error is the status Echo's error handler gives it, so let it
	// write that now (as Echo's logger middleware does; it skips a
	// response already written when the error comes back to it).
	c.Response().Before(func() {
		s.handing = true
		w.WriteHeader(c.Response().Status)
		s.handing = false
	})
	if s.err = s.next(c); s.err != nil {
		c.Error(s.err)
	}
	w.WriteHeader(c.Response().Status)
}

// response is Echo's Response as httplimit writes to it, where a status
// written twice, or handed on from Echo's own WriteHeader, is dropped
// silently (Echo's logs a warning): the status serveNext hands on is the
// one the response has.
type response struct {
	*echo.Response
	s *state
}

func (r *response) WriteHeader(code int) {
	if !r.Committed && !r.s.handing {
		r.Response.WriteHeader(code)
	}
}

func (r *response) Unwrap() http.ResponseWriter { return r.Response }
