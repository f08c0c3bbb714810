package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/redlimit/redlimit/ratelimit/clientip"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// A KeyFunc says who a request counts against: a client address, an API
// key, a user. Any string will do: the limiter escapes it.
type KeyFunc func(r *http.Request) (string, error)

var (
	// ErrNoKey: the request carries nothing to key it by (a missing
	// header). The middleware answers 400 unless FirstOf falls back.
	ErrNoKey = errors.New("httplimit: the request has no key")
	// ErrNoRoute: ByRoute found no route pattern. The middleware answers
	// 500 on the first such request: keying by the URL path instead would
	// give /users/1 and /users/2 buckets of their own, which is no limit.
	ErrNoRoute = errors.New("httplimit: no route pattern")
)

// ByClientIP keys requests by client address: "ip:" and RemoteAddr or,
// from trusted proxies, the address they recorded in X-Forwarded-For
// (clientip.Resolver has the rules). IPv6 addresses count per /64.
func ByClientIP(trustedProxies ...netip.Prefix) KeyFunc {
	return clientip.Resolver{TrustedProxies: trustedProxies}.Key
}

// ByHeader keys requests by a header, such as an API key: "header:", its
// lower-case name, ':' and the value. A request without it fails with
// ErrNoKey. Trust only a header that something in front of you sets.
func ByHeader(name string) KeyFunc {
	canon := strings.ToLower(name)
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(r.Header.Get(name))
		if v == "" {
			return "", fmt.Errorf("%w: no %s header", ErrNoKey, name)
		}
		return "header:" + canon + ":" + v, nil
	}
}

// ByRoute keys requests by route and by key: "route:", JoinKey(route), ':'
// and the key. The route is the pattern the standard mux matched (Go 1.23+,
// when the middleware wraps the route's handler) or SetRoute's; with
// neither, the request fails with ErrNoRoute, never keyed by its path.
func ByRoute(key KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		route := Route(r)
		if route == "" {
			return "", fmt.Errorf("%w for %s %s: wrap each route's handler of a Go 1.23+ http.ServeMux (mux.Handle(pattern, mw(h))), not the mux, or set it with httplimit.SetRoute (the framework adapters do)", ErrNoRoute, r.Method, r.URL.Path)
		}
		k, err := key(r)
		if err != nil {
			return "", err
		}
		return "route:" + JoinKey(route) + ":" + k, nil
	}
}

type routeKey struct{}

// SetRoute returns r carrying route, the pattern a router matched (such as
// gin's c.FullPath() or chi's RoutePattern), for ByRoute.
func SetRoute(r *http.Request, route string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), routeKey{}, route))
}

// Route is the route ByRoute keys r by: the pattern SetRoute set, else the
// one the standard mux matched, else "".
func Route(r *http.Request) string {
	if route, ok := r.Context().Value(routeKey{}).(string); ok && route != "" {
		return route
	}
	return pattern(r)
}

// FirstOf keys a request by the first key function that finds a key: say
// ByHeader("X-API-Key"), then ByClientIP() for anonymous requests. A
// function that fails with anything but ErrNoKey ends the search.
func FirstOf(keys ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		err := fmt.Errorf("%w: no key function", ErrNoKey)
		for _, key := range keys {
			var k string
			if k, err = key(r); !errors.Is(err, ErrNoKey) {
				return k, err
			}
		}
		return "", err
	}
}

// JoinKey joins parts into one key with ':', escaping each part's '\' and
// ':', so that no part can pose as another: JoinKey("a:b", "c") and
// JoinKey("a", "b:c") differ.
func JoinKey(part string, more ...string) string { return key.Join(part, more...) }
