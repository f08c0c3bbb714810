// Package chilimit limits chi routes with any ratelimit.Rule: it is
// httplimit.Middleware with the route chi will match, known wherever the
// middleware sits, so httplimit.ByRoute counts each route apart under
// r.Use too.
//
//	import "github.com/redlimit/redlimit/adapters/chilimit"
//
//	limiter, err := ratelimit.New(rdb, "api", ratelimit.PerMinute(100))
//	if err != nil {
//		log.Fatal(err)
//	}
//	r := chi.NewRouter()
//	r.Use(chilimit.Middleware(limiter, httplimit.ByRoute(httplimit.ByClientIP())))
//
// Why an adapter: chi runs r.Use middleware before it routes, so there is
// no pattern yet, and httplimit.ByRoute alone fails there with
// httplimit.ErrNoRoute (a 500). Alone it works where chi has routed: in
// r.With(...) and in an r.Group's Use, where chi has set r.Pattern. In the
// Use of a subrouter (r.Route, r.Mount) chi has routed only to the mount,
// so r.Pattern is "/api/*" for every route below it: one bucket for all of
// them. This package asks chi's router for the whole pattern instead.
package chilimit

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// noRoute is the route of a request chi matches no route for (a 404 or a
// 405): all of them share it, so a client probing paths that do not exist
// is limited as one route, not one bucket per path.
const noRoute = "(no route)"

// Middleware limits the chi routes it is used on (r.Use of a router or a
// subrouter, r.With, r.Group) as httplimit.Middleware(rule, key, opts...)
// limits an http.Handler; see there for what a denied or undecidable
// request gets. The key function sees the request carrying the whole
// pattern of the route chi matches for it (httplimit.Route), such as
// /api/users/{id}, or "(no route)" for a request that matches none, so
// httplimit.ByRoute counts each route apart. Outside a chi router the
// request carries no route from chi.
func Middleware(rule ratelimit.Rule, key httplimit.KeyFunc, opts ...httplimit.Option) func(http.Handler) http.Handler {
	limit := httplimit.Middleware(rule, key, opts...)
	return func(next http.Handler) http.Handler {
		h := limit(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if route := route(r); route != "" {
				r = httplimit.SetRoute(r, route)
			}
			h.ServeHTTP(w, r)
		})
	}
}

// route asks the router at the top of the request (chi's RouteContext
// holds it from the start) which pattern it matches the request to: one
// more walk of chi's tree, which costs far less than the round trip to
// Redis.
func route(r *http.Request) string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return ""
	}
	method := rctx.RouteMethod
	if method == "" {
		method = r.Method
	}
	path := r.URL.RawPath // chi routes by the raw path when there is one
	if path == "" {
		path = r.URL.Path
	}
	if path == "" {
		path = "/"
	}
	if p := rctx.Routes.Find(chi.NewRouteContext(), method, path); p != "" {
		return p
	}
	return noRoute
}
