//go:build !go1.23

package ratelimit

import "net/http"

func route(r *http.Request) string { return r.Method + " " + r.URL.Path }
