//go:build go1.23

package httplimit

import "net/http"

func pattern(r *http.Request) string { return r.Pattern }
