// Package echolimit limits Echo v5 routes with any ratelimit.Rule, as
// httplimit.Middleware limits net/http handlers: the same options, key
// functions, header fields, problem bodies and error handling. For Echo v4,
// import github.com/redlimit/redlimit/adapters/echov4/echolimit.
//
//	e := echo.New()
//	e.Use(echolimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
//
// httplimit.ByRoute keys by the route Echo matched (c.Path(), such as
// /users/:id), never by the URL path.
package echolimit

// What Echo v5 does otherwise than Echo v4 (echo4.go in
// adapters/echov4/echolimit); echolimit.go is shared.

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

// route is the pattern of the route Echo matched for c, or, when it has
// not routed yet (e.Pre) or matched nothing, the one its router finds for
// the request as it stands.
func route(c *echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	probe := c.Echo().NewContext(c.Request(), nil)
	c.Echo().Router().Route(probe)
	if p := probe.Path(); p != "" {
		return p
	}
	return noRoute
}

// versioned is what state holds for one Echo: nothing for v5.
type versioned struct{}

// writerFor is the writer httplimit's middleware writes to: Echo's own.
func writerFor(s *state) http.ResponseWriter { return s.c.Response() }

// serveCounted runs next under w, httplimit's wrapper of Echo's Response,
// which unwraps to it as Echo asks of a writer set with SetResponse: the
// handlers write through w, so the status reaches httplimit before it goes
// out.
func serveCounted(w http.ResponseWriter, s *state) {
	c := s.c
	res := c.Response()
	c.SetResponse(w)
	defer c.SetResponse(res)
	if s.err = s.next(c); s.err != nil {
		c.Echo().HTTPErrorHandler(c, s.err)
	}
}
