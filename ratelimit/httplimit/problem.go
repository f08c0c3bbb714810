package httplimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/redlimit/redlimit/ratelimit"
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
	// ViolatedPolicies names the limits that denied (the extension member
	// the RateLimit draft defines for its problem types).
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// ProblemFor is the default body of a denied request: the RateLimit draft's
// quota-exceeded problem, status 429, whose detail says "locked out" when
// a lockout denied it (Decision.LockedOut), or its
// temporary-reduced-capacity problem, status 503, when only fallbacks
// failing closed denied it.
func ProblemFor(d ratelimit.Decision) Problem {
	if d.Allowed {
		return Problem{Type: "about:blank", Title: "OK", Status: http.StatusOK}
	}
	ps := parts(d)
	var violated []string
	closed := len(ps) > 0
	lockedOut := false
	for _, p := range ps {
		if !p.Allowed {
			violated = append(violated, p.Name)
			closed = closed && p.Fallback == ratelimit.FailClosed
			lockedOut = lockedOut || p.LockedOut
		}
	}
	if closed {
		return Problem{
			Type:             problemReducedCapacity,
			Title:            "Request cannot be satisfied due to temporary server capacity constraints",
			Status:           http.StatusServiceUnavailable,
			Detail:           "The rate limiter cannot reach its store and fails closed.",
			ViolatedPolicies: violated,
		}
	}
	p := Problem{
		Type:             problemQuotaExceeded,
		Title:            "Request cannot be satisfied as assigned quota has been exceeded",
		Status:           http.StatusTooManyRequests,
		ViolatedPolicies: violated,
	}
	// The title is the problem type's, the same for every occurrence
	// (RFC 9457, 3.1.3); the detail says what happened to this request.
	switch retry := retryAfter(ps); {
	case retry == ratelimit.Never:
		p.Detail = "This request costs more than the quota lets through at once: it can never pass."
	case lockedOut:
		p.Detail = fmt.Sprintf("Locked out after the quota was used up: retry in %d s.", ceilSeconds(retry))
	default:
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
