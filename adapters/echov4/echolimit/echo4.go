// Package echolimit limits Echo v4 routes with any ratelimit.Rule, as
// httplimit.Middleware limits net/http handlers: the same options, key
// functions, header fields, problem bodies and error handling. For Echo v5,
// import github.com/redlimit/redlimit/adapters/echolimit.
//
//	e := echo.New()
//	e.Use(echolimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
//
// httplimit.ByRoute keys by the route Echo matched (c.Path(), such as
// /users/:id), never by the URL path.
package echolimit

// What Echo v4 does otherwise than Echo v5 (echo5.go in
// adapters/echolimit); echolimit.go is generated from v5's.

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

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

// versioned is what state holds for one Echo: for v4, whether the status
// goes to httplimit from Echo's own WriteHeader.
type versioned struct{ handing bool }

// writerFor is the writer httplimit's middleware writes to: Echo's
// Response, wrapped.
func writerFor(s *state) http.ResponseWriter { return &response{s.c.Response(), s} }

// serveCounted runs next when httplimit wrapped the writer, w, to learn the
// status: Echo's handlers write to c.Response(), so the status is handed to
// w just before Echo sends it (so the count's fields go out with it), or
// once next returns.
func serveCounted(w http.ResponseWriter, s *state) {
	c := s.c
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
// silently (Echo's logs a warning): the status serveCounted hands on is the
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
