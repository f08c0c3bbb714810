// Package ginlimit limits gin routes with any ratelimit.Rule, as
// httplimit.Middleware limits net/http handlers: the same options, key
// functions, RateLimit header fields, 429 and problem bodies, and error
// handling, as a gin.HandlerFunc.
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err)
//	}
//	r := gin.New()
//	r.Use(ginlimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
//
// httplimit.ByRoute keys by the route gin matched (c.FullPath(), such as
// /users/:id), never by the URL path. Key reaches values on the
// *gin.Context, such as a user an authenticating middleware set.
package ginlimit

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// noRoute is the route of a request gin matched no route for (a 404 or a
// 405): all of them share it, so a client probing paths that do not exist
// is limited as one route, not one bucket per path.
const noRoute = "(no route)"

// Middleware limits the gin routes it is used on (r.Use, a group's Use, or
// one route's handlers) as httplimit.Middleware(rule, key, opts...) limits
// an http.Handler; see there for what a denied or undecidable request
// gets. The key function sees c.Request carrying the route gin matched
// (httplimit.Route), or "(no route)" for a request that matched none, so
// httplimit.ByRoute counts each route apart. A denied request is aborted:
// the handlers after Middleware do not run. With httplimit.WithCountIf,
// the status counted is the one gin's writer holds when the handlers
// return (c.AbortWithStatus(401) counts as 401).
func Middleware(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) gin.HandlerFunc {
	limit := httplimit.Middleware(rule, key, opts...)(http.HandlerFunc(serveNext))
	return func(c *gin.Context) {
		route := c.FullPath()
		if route == "" {
			route = noRoute
		}
		s := &state{c: c}
		r := httplimit.SetRoute(c.Request, route)
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, s))
		limit.ServeHTTP(c.Writer, r)
		if !s.next {
			c.Abort()
		}
	}
}

// Key turns a key function of the *gin.Context, such as one that reads the
// user an authenticating middleware stored with c.Set, into an
// httplimit.KeyFunc for Middleware, to use alone or inside httplimit.ByRoute
// and httplimit.FirstOf. Outside Middleware it fails with
// ratelimit.ErrInvalid.
func Key(key func(c *gin.Context) (string, error)) httplimit.KeyFunc {
	return func(r *http.Request) (string, error) {
		s, ok := r.Context().Value(stateKey{}).(*state)
		if !ok {
			return "", fmt.Errorf("%w: ginlimit.Key used outside ginlimit.Middleware", ratelimit.ErrInvalid)
		}
		return key(s.c)
	}
}

type stateKey struct{}

// state carries the gin context through httplimit's middleware to the
// handler it calls when the request passes.
type state struct {
	c    *gin.Context
	next bool // the request passed: the rest of the chain ran
}

// serveNext is the handler httplimit's middleware calls for a request
// that passes: it runs the rest of gin's chain.
func serveNext(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(stateKey{}).(*state)
	s.next = true
	c := s.c
	c.Request = r
	if w != http.ResponseWriter(c.Writer) {
		// httplimit wrapped the writer to learn the status (WithCountIf),
		// but gin's handlers write to c.Writer: hand it the status gin's
		// writer holds before gin sends it (so the count's fields go
		// out), or once the handlers return. gin ignores a WriteHeader of
		// the status it has.
		gw := &handing{ResponseWriter: c.Writer, to: w}
		c.Writer = gw
		defer func() { c.Writer = gw.ResponseWriter; gw.hand() }()
	}
	c.Next()
}

// handing is gin's writer, handing the status to httplimit's (to) once,
// before anything goes out.
type handing struct {
	gin.ResponseWriter
	to     http.ResponseWriter
	handed bool
}

func (w *handing) hand() {
	if !w.handed {
		w.handed = true
		w.to.WriteHeader(w.ResponseWriter.Status())
	}
}

func (w *handing) WriteHeaderNow() { w.hand(); w.ResponseWriter.WriteHeaderNow() }

func (w *handing) Write(b []byte) (int, error) { w.hand(); return w.ResponseWriter.Write(b) }

func (w *handing) WriteString(s string) (int, error) {
	w.hand()
	return w.ResponseWriter.WriteString(s)
}

func (w *handing) Flush() { w.hand(); w.ResponseWriter.Flush() }
