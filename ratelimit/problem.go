package ratelimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// A Problem is an RFC 9457 problem details object, the body the middleware
// writes for a request it refuses (application/problem+json). Replace it
// with WithDenied and WithErrorHandler; ProblemFor builds the default, to
// adjust and Write.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// ViolatedPolicies names the limiters that denied (the extension member
	// the RateLimit draft defines for its problem types).
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// ProblemFor is the default body for a denied request: the RateLimit
// draft's "quota-exceeded" problem with status 429, or its
// "temporary-reduced-capacity" problem with status 503 when only limiters
// that fail closed denied it, because Redis could not be asked.
func ProblemFor(v Verdict) Problem {
	if v.Allowed() {
		return Problem{Type: "about:blank", Title: "OK", Status: http.StatusOK}
	}
	if v.FailedClosed() {
		return Problem{
			Type:             problemReducedCapacity,
			Title:            "Request cannot be satisfied due to temporary server capacity constraints",
			Status:           http.StatusServiceUnavailable,
			Detail:           "The rate limiter cannot reach its store and fails closed.",
			ViolatedPolicies: v.Violated(),
		}
	}
	p := Problem{
		Type:             problemQuotaExceeded,
		Title:            "Request cannot be satisfied as assigned quota has been exceeded",
		Status:           http.StatusTooManyRequests,
		ViolatedPolicies: v.Violated(),
	}
	if retry := v.RetryAfter(); retry == Never {
		p.Detail = "This request costs more than the quota lets through at once: it can never pass."
	} else {
		p.Detail = fmt.Sprintf("Retry in %d s.", ceilSeconds(retry))
	}
	return p
}

// Write sends p with its status as application/problem+json.
func (p Problem) Write(w http.ResponseWriter) {
	body, err := json.Marshal(p)
	if err != nil { // cannot happen for this struct
		http.Error(w, p.Title, p.Status)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}
