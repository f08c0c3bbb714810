//go:build !go1.23

package httplimit

import "net/http"

// Before Go 1.23 the mux does not say which pattern it matched.
func pattern(*http.Request) string { return "" }
