package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed

	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/httplimit"
)

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// quotaClock is a frozen server whose clock the limiter reads too
// (WithClock): the server sits at a date of the test's choosing, far from
// this machine's, which the calendar's boundaries are worked out from.
type quotaClock struct{ *frozen }

func newQuotaClock(t *testing.T, at time.Time) quotaClock {
	f := newFrozen(t)
	f.Now = at
	f.SetTime(at)
	return quotaClock{f}
}

func (q quotaClock) option() ratelimit.Option {
	return ratelimit.WithClock(func() time.Time { return q.Now })
}

// A daily quota in two time zones on the days their clocks change: the
// count ends at the next midnight there, 23 or 25 hours on, and
// ResetAfter (and RetryAfter when denied) reaches that boundary exactly.
func TestQuotaDSTDays(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		zone   string
		day    time.Time // a midnight there
		length time.Duration
	}{
		{"Europe/Berlin", time.Date(2026, 3, 29, 0, 0, 0, 0, zone(t, "Europe/Berlin")), 23 * time.Hour},
		{"Europe/Berlin", time.Date(2026, 10, 25, 0, 0, 0, 0, zone(t, "Europe/Berlin")), 25 * time.Hour},
		{"America/New_York", time.Date(2026, 3, 8, 0, 0, 0, 0, zone(t, "America/New_York")), 23 * time.Hour},
		{"America/New_York", time.Date(2026, 11, 1, 0, 0, 0, 0, zone(t, "America/New_York")), 25 * time.Hour},
	} {
		t.Run(c.zone+"/"+c.day.Format("2006-01-02"), func(t *testing.T) {
			q := newQuotaClock(t, c.day)
			// No WithAlgorithm: a quota counts in a FixedWindow.
			l, err := ratelimit.New(q.rdb, "daily", ratelimit.Daily(2, c.day.Location()), q.option())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.ResetAfter != c.length {
					t.Fatalf("request %d: %+v, %v; want allowed, reset after %v", i, d, err, c.length)
				}
			}
			q.advance(time.Hour)
			d, err := l.Allow(ctx, "k")
			if err != nil || d.Allowed || d.RetryAfter != c.length-time.Hour || d.ResetAfter != c.length-time.Hour {
				t.Fatalf("third request an hour on: %+v, %v; want denied until the next midnight, %v away", d, err, c.length-time.Hour)
			}
			if next := q.Now.Add(d.ResetAfter); !next.Equal(c.day.AddDate(0, 0, 1)) {
				t.Errorf("resets at %v, want %v", next, c.day.AddDate(0, 0, 1))
			}
			// The key lives to the boundary, plus the 60 s a caller clock
			// may lag the server's.
			if ttl := q.TTL(testredis.Key("rl:daily:", "k")); ttl != c.length-time.Hour+time.Minute {
				t.Errorf("the key's TTL is %v, want %v", ttl, c.length-time.Hour+time.Minute)
			}
			q.advance(c.length - time.Hour)
			if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 1 || d.ResetAfter != 24*time.Hour {
				t.Errorf("at the next midnight: %+v, %v; want a fresh ordinary day", d, err)
			}
		})
	}
}

// A monthly quota across the turn of a month and of a year in a zone:
// used / remaining / resets at, read with Peek, which counts nothing.
func TestQuotaMonthAndYear(t *testing.T) {
	ctx := context.Background()
	berlin := zone(t, "Europe/Berlin")
	eve := time.Date(2026, 12, 31, 23, 59, 0, 0, berlin)
	q := newQuotaClock(t, eve)
	monthly, err := ratelimit.New(q.rdb, "monthly", ratelimit.Monthly(10000, berlin), q.option())
	if err != nil {
		t.Fatal(err)
	}
	yearly, err := monthly.WithLimit(ratelimit.Yearly(100000, berlin))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := monthly.AllowN(ctx, "m", 9000); err != nil || !d.Allowed || d.ResetAfter != time.Minute {
		t.Fatalf("9000 a minute before the new year: %+v, %v", d, err)
	}
	if d, err := yearly.AllowN(ctx, "y", 9000); err != nil || !d.Allowed || d.ResetAfter != time.Minute {
		t.Fatalf("yearly: %+v, %v", d, err)
	}
	for i := 0; i < 2; i++ {
		d, err := monthly.Peek(ctx, "m")
		if err != nil || d.Limit.Rate-d.Remaining != 9000 || !q.Now.Add(d.ResetAfter).Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, berlin)) {
			t.Errorf("peek %d: %+v, %v; want 9000 used, resetting at the new year", i, d, err)
		}
	}
	q.advance(time.Minute)
	d, err := monthly.Peek(ctx, "m")
	if err != nil || d.Remaining != 10000 || d.ResetAfter != 0 {
		t.Errorf("at the new year: %+v, %v; want nothing used", d, err)
	}
	if d, err := monthly.AllowN(ctx, "m", 1); err != nil || !d.Allowed || d.ResetAfter != 31*24*time.Hour {
		t.Errorf("January: %+v, %v; want 31 days to February", d, err)
	}
	if d, err := yearly.Peek(ctx, "y"); err != nil || d.Remaining != 100000 {
		t.Errorf("yearly at the new year: %+v, %v", d, err)
	}
}

// A quota's denial in the RateLimit header: t is the seconds to the
// calendar's boundary.
func TestQuotaHeader(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	q := newQuotaClock(t, time.Date(2026, 3, 29, 22, 0, 0, 0, berlin))
	l, err := ratelimit.New(q.rdb, "daily", ratelimit.Daily(1, berlin), q.option())
	if err != nil {
		t.Fatal(err)
	}
	h := httplimit.Middleware(l, func(*http.Request) (string, error) { return "k", nil })(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	var last *httptest.ResponseRecorder
	for i := 0; i < 2; i++ {
		last = httptest.NewRecorder()
		h.ServeHTTP(last, httptest.NewRequest("GET", "/", nil))
	}
	if last.Code != http.StatusTooManyRequests || !strings.Contains(last.Header().Get("RateLimit"), "t=7200") {
		t.Errorf("second request: %d, RateLimit %q; want 429 and t=7200 (2 hours to midnight)", last.Code, last.Header().Get("RateLimit"))
	}
}

// A quota is refused, before Redis, where it cannot count: a nil zone,
// another algorithm, a limiter of another algorithm's WithLimit, Atomic.
func TestQuotaRefused(t *testing.T) {
	f := newFrozen(t)
	berlin := zone(t, "Europe/Berlin")
	if _, err := ratelimit.New(f.rdb, "q", ratelimit.Daily(5, nil)); !errors.Is(err, ratelimit.ErrInvalid) || !strings.Contains(err.Error(), "Location is nil") {
		t.Errorf("nil Location: %v", err)
	}
	if _, err := ratelimit.New(f.rdb, "q", ratelimit.Daily(5, berlin), ratelimit.WithAlgorithm(ratelimit.GCRA)); !errors.Is(err, ratelimit.ErrInvalid) || !strings.Contains(err.Error(), "counts in a FixedWindow") {
		t.Errorf("with GCRA: %v", err)
	}
	g, err := ratelimit.New(f.rdb, "g", ratelimit.PerMinute(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WithLimit(ratelimit.Monthly(5, berlin)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a GCRA limiter's WithLimit: %v", err)
	}
	q, err := ratelimit.New(f.rdb, "q", ratelimit.Monthly(5, berlin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ratelimit.Atomic(g, q); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Atomic with a quota: %v", err)
	}
	if n := f.rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

// While Redis is down, FailLocal counts a quota by its period in memory.
func TestQuotaFailLocal(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	l, err := ratelimit.New(testredis.Down(t), "q", ratelimit.Daily(2, time.UTC),
		ratelimit.WithFallback(ratelimit.FailLocal(1)), ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		d, err := l.Allow(ctx, "k")
		if err != nil || d.Allowed != want || d.Source != "fail-local" {
			t.Fatalf("request %d: %+v, %v; want allowed %v in memory", i, d, err, want)
		}
		if !want && d.RetryAfter != time.Hour {
			t.Errorf("denied: RetryAfter %v, want 1h to midnight", d.RetryAfter)
		}
	}
}

// A quota's reservation settles in its period: a refund gives back, a
// charge counts past the quota until the period ends; after the boundary
// neither moves anything.
func TestQuotaReserveSettle(t *testing.T) {
	ctx := context.Background()
	berlin := zone(t, "Europe/Berlin")
	q := newQuotaClock(t, time.Date(2026, 3, 29, 21, 0, 0, 0, berlin))
	l, err := ratelimit.New(q.rdb, "tokens", ratelimit.Daily(100, berlin), q.option())
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Reserve(ctx, "k", 50)
	if err != nil || !r.Decision.Allowed {
		t.Fatalf("Reserve(50): %+v, %v", r.Decision, err)
	}
	if err := r.Settle(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Peek(ctx, "k"); d.Remaining != 80 {
		t.Errorf("after Settle(20) of 50: %d left, want 80", d.Remaining)
	}
	r, _ = l.Reserve(ctx, "k", 10)
	if err := r.Settle(ctx, 200); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Peek(ctx, "k"); d.Allowed || d.Remaining != 0 || d.RetryAfter != 3*time.Hour {
		t.Errorf("after a charge past the quota: %+v; want denied for the 3 hours to midnight", d)
	}
	late, _ := l.Reserve(ctx, "j", 10)
	q.advance(3 * time.Hour)
	if err := late.Settle(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Peek(ctx, "k"); !d.Allowed || d.Remaining != 100 {
		t.Errorf("the next day: %+v; want a fresh quota", d)
	}
}

// The deny cache answers a quota's denial with the wait to the calendar's
// boundary, counting nothing.
func TestQuotaDenyCache(t *testing.T) {
	ctx := context.Background()
	berlin := zone(t, "Europe/Berlin")
	q := newQuotaClock(t, time.Date(2026, 10, 25, 20, 0, 0, 0, berlin))
	l, err := ratelimit.New(q.rdb, "daily", ratelimit.Daily(1, berlin), q.option(), ratelimit.WithDenyCache(16))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("first: %+v, %v", d, err)
	}
	if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed || d.Source != "redis" || d.RetryAfter != 4*time.Hour {
		t.Fatalf("second: %+v, %v; want denied by Redis for the 4 hours to midnight", d, err)
	}
	// Within the minute a cached denial is kept for.
	q.advance(30 * time.Second)
	if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed || d.Source != "deny-cache" || d.RetryAfter != 4*time.Hour-30*time.Second {
		t.Errorf("30 s on: %+v, %v; want the cached denial, 30 s less to midnight", d, err)
	}
	q.advance(4*time.Hour - 30*time.Second)
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.ResetAfter != 24*time.Hour {
		t.Errorf("at midnight: %+v, %v; want a fresh day", d, err)
	}
}

// All takes a quota beside a rate: the quota binds when it is used up,
// with the wait to its boundary; Wait returns at once when that boundary
// is past the context's deadline.
func TestQuotaAllAndWait(t *testing.T) {
	ctx := context.Background()
	berlin := zone(t, "Europe/Berlin")
	q := newQuotaClock(t, time.Date(2026, 1, 31, 23, 0, 0, 0, berlin))
	rate, err := ratelimit.New(q.rdb, "rate", ratelimit.PerSecond(10), q.option())
	if err != nil {
		t.Fatal(err)
	}
	quota, err := ratelimit.New(q.rdb, "quota", ratelimit.Monthly(3, berlin), q.option())
	if err != nil {
		t.Fatal(err)
	}
	rule, err := ratelimit.All(rate, quota)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := rule.AllowN(ctx, "k", 3); err != nil || !d.Allowed {
		t.Fatalf("3 of the month's 3: %+v, %v", d, err)
	}
	d, err := rule.Allow(ctx, "k")
	if err != nil || d.Allowed || d.Name != "quota" || d.RetryAfter != time.Hour || len(d.Parts) != 2 {
		t.Fatalf("the 4th: %+v, %v; want the quota to bind, an hour to February", d, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := quota.Wait(wctx, "k"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("Wait an hour from the month's end with 10 s to spare: %v after %v; want DeadlineExceeded at once", err, time.Since(start))
	}
}
