package httplimit

import (
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// The IETF RateLimit header fields, pinned to one draft:
//
//	draft-ietf-httpapi-ratelimit-headers-10, 27 September 2025
//	https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/10/
//
// Both fields are Structured Field lists (RFC 9651) of items whose value is
// the policy's name as a String:
//
//	RateLimit-Policy: "permin";q=50;w=60,"perhr";q=1000;w=3600
//	RateLimit: "default";r=50;t=30
//
// q is the quota, w its window in whole seconds, r the remaining quota and
// t the seconds until more quota is made available. Section 4.1 ("Quota
// Exceeded") defines the problem type of a 429's body. A later draft that
// changes the fields changes this file.

// The draft's problem types (its section 4) for the bodies of a 429 and of
// a 503 from a limiter that fails closed.
const (
	problemQuotaExceeded   = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	problemReducedCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// SetHeaders sets the rate-limit fields of a response for d, as the
// middleware does: RateLimit-Policy and RateLimit for each limit of d
// (draft-ietf-httpapi-ratelimit-headers-10), X-RateLimit-Limit, -Remaining
// and -Reset for the one that binds, and on a denial Retry-After in whole
// seconds, rounded up. A decision that reports no limit sets nothing.
func SetHeaders(h http.Header, d ratelimit.Decision) { writeHeaders(h, d, time.Now()) }

// closedRetryAfter is the Retry-After of a 503: Redis could not be asked,
// so no wait is known, and a second brings a client back soon after a
// short outage.
const closedRetryAfter = "1"

// parts are the limits a Decision reports.
func parts(d ratelimit.Decision) []ratelimit.Decision {
	if len(d.Parts) > 0 {
		return d.Parts
	}
	if d.Name == "" {
		return nil
	}
	return []ratelimit.Decision{d}
}

// clearHeaders removes what writeHeaders sets for a decision that passed,
// to write another decision.
func clearHeaders(h http.Header) {
	for _, f := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		h.Del(f)
	}
}

func writeHeaders(h http.Header, d ratelimit.Decision, now time.Time) {
	ps := parts(d)
	if len(ps) == 0 {
		return
	}
	var policy, limit []string
	strictest := -1
	for i, p := range ps {
		policy = append(policy, policyItem(p.Name, p.Limit))
		if p.Cause != nil {
			continue
		}
		limit = append(limit, limitItem(p.Name, p))
		if strictest < 0 || stricter(p, ps[strictest]) {
			strictest = i
		}
	}
	h.Set("RateLimit-Policy", strings.Join(policy, ", "))
	switch retry := retryAfter(ps); {
	case retry == ratelimit.Never: // waiting would not help
	case retry > 0:
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(retry), 10))
	case !d.Allowed:
		h.Set("Retry-After", closedRetryAfter) // only a fallback failing closed denied
	}
	if strictest < 0 {
		return
	}
	h.Set("RateLimit", strings.Join(limit, ", "))
	s := ps[strictest]
	h.Set("X-RateLimit-Limit", strconv.FormatInt(s.Limit.Burst, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(s.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(now.Add(s.ResetAfter)), 10))
}

// stricter is ratelimit's order of decisions from Redis: a denial over an
// allowance, then the longer wait, then the smaller Remaining.
func stricter(a, b ratelimit.Decision) bool {
	switch {
	case a.Allowed != b.Allowed:
		return !a.Allowed
	case !a.Allowed:
		return a.RetryAfter > b.RetryAfter
	}
	return a.Remaining < b.Remaining
}

// retryAfter is the longest wait among the denials: Never when one of
// them can never pass, 0 when none has a wait (none, or only fail-closed
// ones).
func retryAfter(ps []ratelimit.Decision) time.Duration {
	var longest time.Duration
	for _, p := range ps {
		if !p.Allowed && p.RetryAfter > longest {
			longest = p.RetryAfter
		}
	}
	return longest
}

func policyItem(name string, l ratelimit.Limit) string {
	// w = ⌈Burst × Period / Rate⌉ in seconds, without overflow: Burst ×
	// Period in ms reaches 1e20.
	hi, lo := bits.Mul64(uint64(l.Burst), uint64(l.Period.Milliseconds()))
	den := uint64(l.Rate) * 1000
	var w uint64 = 1
	if hi < den { // always, for a limit New accepted; else w stays 1
		q, r := bits.Div64(hi, lo, den)
		if r > 0 {
			q++
		}
		w = max(q, 1)
	}
	return sfString(name) + ";q=" + strconv.FormatInt(l.Burst, 10) + ";w=" + strconv.FormatUint(w, 10)
}

// limitItem is a limit's RateLimit item. A request that can never pass
// gets r=0 and no t: nothing is left for it, and no time at which more
// will be (the draft's t is optional); t=0 would invite a retry at once.
func limitItem(name string, d ratelimit.Decision) string {
	if !d.Allowed && d.RetryAfter == ratelimit.Never {
		return sfString(name) + ";r=0"
	}
	t := d.ResetAfter
	if !d.Allowed {
		t = d.RetryAfter
	}
	return sfString(name) + ";r=" + strconv.FormatInt(d.Remaining, 10) + ";t=" + strconv.FormatInt(ceilSeconds(t), 10)
}

// sfString is a Structured Field String (RFC 9651, section 3.3.3). Limiter
// names hold only letters, digits, '_', '-' and '.', but the escapes keep
// it right for any printable ASCII.
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// ceilSeconds rounds d up to whole seconds: a wait reported in seconds is
// never shorter than the real one.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
