package httplimit_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

// sameSF compares a field we set with a field value quoted from the draft,
// as Structured Field lists.
func sameSF(t *testing.T, field, got, draft string) {
	t.Helper()
	g, err := parseSFList(got)
	if err != nil {
		t.Fatalf("%s: ours %q does not parse: %v", field, got, err)
	}
	d, err := parseSFList(draft)
	if err != nil {
		t.Fatalf("%s: the draft's %q does not parse: %v", field, draft, err)
	}
	if diff := cmp.Diff(d, g); diff != "" {
		t.Errorf("%s: draft (-) vs ours (+):\n%s", field, diff)
	}
}

// The examples of draft-ietf-httpapi-ratelimit-headers-10, quoted, and the
// decisions that must produce them.
func TestDraftExamples(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name   string
		parts  []ratelimit.Decision
		bind   int    // the part the X- fields show
		policy string // RateLimit-Policy, from the draft
		limit  string // RateLimit, from the draft
		retry  string // Retry-After
	}{
		{
			name:   "section 3.2: the window in w",
			parts:  []ratelimit.Decision{{Name: "default", Limit: ratelimit.Limit{Rate: 100, Period: 10 * sec, Burst: 100}, Allowed: true, Remaining: 50, ResetAfter: 30 * sec}},
			policy: `"default";q=100;w=10`,
			limit:  `"default";r=50;t=30`,
		},
		{
			name: "section 3.2: several policies",
			parts: []ratelimit.Decision{
				{Name: "permin", Limit: ratelimit.PerMinute(50), Allowed: true, Remaining: 49, ResetAfter: 1200 * time.Millisecond},
				{Name: "perhr", Limit: ratelimit.Per(1000, time.Hour), Allowed: true, Remaining: 999, ResetAfter: 3599 * sec},
			},
			policy: `"permin";q=50;w=60,"perhr";q=1000;w=3600`,
			limit:  `"permin";r=49;t=2, "perhr";r=999;t=3599`,
		},
		{
			name:   "appendix A.2.1: throttling window specified via parameter",
			parts:  []ratelimit.Decision{{Name: "fixedwindow", Limit: ratelimit.PerMinute(100), Allowed: true, Remaining: 99, ResetAfter: 50 * sec}},
			policy: `"fixedwindow";q=100;w=60`,
			limit:  `"fixedwindow";r=99;t=50`,
		},
		{
			name:   "appendix A.1.4: use in throttled responses",
			parts:  []ratelimit.Decision{{Name: "default", Limit: ratelimit.PerSecond(10), RetryAfter: 4200 * time.Millisecond, ResetAfter: 9 * sec}},
			policy: `"default";q=10;w=1`,
			limit:  `"default";r=0;t=5`,
			retry:  "5",
		},
		{
			name:   "appendix A.1.3: basic policy of 100 per minute",
			parts:  []ratelimit.Decision{{Name: "basic", Limit: ratelimit.PerMinute(100), Allowed: true, Remaining: 60, ResetAfter: 58 * sec}},
			policy: `"basic";q=100;w=60`,
			limit:  `"basic";r=60;t=58`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.parts[0]
			if len(tt.parts) > 1 {
				d = tt.parts[tt.bind]
				d.Parts = tt.parts
			}
			h := http.Header{}
			before := time.Now()
			httplimit.SetHeaders(h, d)
			after := time.Now()
			sameSF(t, "RateLimit-Policy", h.Get("RateLimit-Policy"), tt.policy)
			sameSF(t, "RateLimit", h.Get("RateLimit"), tt.limit)
			if got := h.Get("Retry-After"); got != tt.retry {
				t.Errorf("Retry-After %q, want %q", got, tt.retry)
			}
			b := tt.parts[tt.bind]
			if got, want := h.Get("X-RateLimit-Limit"), strconv.FormatInt(b.Limit.Burst, 10); got != want {
				t.Errorf("X-RateLimit-Limit %q, want %q", got, want)
			}
			if got, want := h.Get("X-RateLimit-Remaining"), strconv.FormatInt(b.Remaining, 10); got != want {
				t.Errorf("X-RateLimit-Remaining %q, want %q", got, want)
			}
			checkReset(t, h, b, before, after)
		})
	}
}

// Issue 15: a decision that reports no limit (Unlimited's, or an empty
// one) writes no field at all: an empty RateLimit-Policy is no List.
func TestSetHeadersWritesNothingForNoLimit(t *testing.T) {
	d, err := ratelimit.Unlimited.AllowN(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []ratelimit.Decision{{}, d, {Allowed: true}} {
		h := http.Header{}
		httplimit.SetHeaders(h, d)
		if len(h) != 0 {
			t.Errorf("SetHeaders(%+v) wrote %v", d, h)
		}
	}
}

// checkReset holds X-RateLimit-Reset to the Unix second, rounded up, at
// which the decision's limiter is full again.
func checkReset(t *testing.T, h http.Header, d ratelimit.Decision, before, after time.Time) {
	t.Helper()
	got, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	lo := before.Add(d.ResetAfter).Unix()
	hi := after.Add(d.ResetAfter).Unix() + 1
	if err != nil || got < lo || got > hi {
		t.Errorf("X-RateLimit-Reset %q, want from %d to %d", h.Get("X-RateLimit-Reset"), lo, hi)
	}
}

// A policy's w is the time a full burst takes to come back, rounded up: a
// client pacing at q per w never outruns the limit.
func TestPolicyWindow(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		limit ratelimit.Limit
		alg   ratelimit.Algorithm
		want  string
	}{
		{ratelimit.PerSecond(10).WithBurst(20), ratelimit.GCRA, `"p";q=20;w=2`},
		{ratelimit.PerSecond(3).WithBurst(5), ratelimit.TokenBucket, `"p";q=5;w=2`},
		{ratelimit.Per(1, 250*ms), ratelimit.LeakyBucket, `"p";q=1;w=1`},
		{ratelimit.Limit{Rate: 1000, Period: ms, Burst: 1000}, ratelimit.FixedWindow, `"p";q=1000;w=1`},
		{ratelimit.Per(1e9, 24*time.Hour), ratelimit.SlidingWindowCounter, `"p";q=1000000000;w=86400`},
		{ratelimit.Limit{Rate: 1, Period: 1e11 * ms, Burst: 10}, ratelimit.TokenBucketInterval, `"p";q=10;w=1000000000`},
	} {
		// The limit as a limiter accepts it, and its decision from Redis.
		l, err := ratelimit.New(newFrozen(t).rdb, "p", tt.limit, ratelimit.WithAlgorithm(tt.alg))
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Peek(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		httplimit.SetHeaders(h, d)
		sameSF(t, fmt.Sprint(tt.limit), h.Get("RateLimit-Policy"), tt.want)
	}
}
