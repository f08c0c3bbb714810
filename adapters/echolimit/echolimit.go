package echolimit

// This file is shared by the modules for Echo v5 and v4: the copy in
// adapters/echov4/echolimit is made from adapters/echolimit's by
// adapters/echov4/echolimit/internal/samesource (go test -update there).
// What the two Echos do otherwise is in echo5.go and in echo4.go.

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// noRoute is the route of a request Echo matches no route for (a 404 or a
// 405): all of them share it, so a client probing paths that do not exist
// is limited as one route, not one bucket per path.
const noRoute = "(no route)"

// Middleware limits the Echo routes it is used on (e.Use, e.Pre, a group's
// Use, or one route's middleware) as httplimit.Middleware(rule, key,
// opts...) limits an http.Handler, keyed with the route Echo matches
// (httplimit.Route), or "(no route)". A denied request does not reach next.
func Middleware(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) echo.MiddlewareFunc {
	limit := httplimit.Middleware(rule, key, opts...)(http.HandlerFunc(serveNext))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			s := &state{c: c, next: next}
			s.res = writerFor(s)
			r := httplimit.SetRoute(c.Request(), route(c))
			r = r.WithContext(context.WithValue(r.Context(), stateKey{}, s))
			limit.ServeHTTP(s.res, r)
			return s.err
		}
	}
}

// Key turns a key function of the *echo.Context, such as one that reads the
// user an authenticating middleware stored with c.Set, into an
// httplimit.KeyFunc for Middleware. Outside Middleware it fails with
// ratelimit.ErrInvalid.
func Key(key func(c *echo.Context) (string, error)) httplimit.KeyFunc {
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
	c    *echo.Context
	next echo.HandlerFunc
	res  http.ResponseWriter // what httplimit writes to (writerFor)
	err  error
	versioned
}

// serveNext is the handler httplimit's middleware calls for a request
// that passes: it runs next. httplimit wraps the writer to learn the status
// (WithCountIf); then an error next returns goes through Echo's
// HTTPErrorHandler at once, so that its status (401 for
// echo.ErrUnauthorized) is the one counted, as Echo's own RequestLogger
// does (the handler skips a response written already when the error comes
// back to it).
func serveNext(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(stateKey{}).(*state)
	s.c.SetRequest(r)
	if w == s.res {
		s.err = s.next(s.c)
		return
	}
	serveCounted(w, s)
}
