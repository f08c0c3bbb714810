package browser

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// shownLane is a lane of the compare view as the page draws it.
type shownLane struct {
	Algorithm string           `json:"algorithm"`
	Marks     []shownMark      `json:"marks"`
	Totals    map[string]int64 `json:"totals"`
	Overlaps  []string         `json:"overlaps"` // pairs of marks whose boxes intersect
	Outside   []int            `json:"outside"`  // marks not wholly inside the lane's drawing
	Titles    []string         `json:"titles"`
}

type shownMark struct {
	At   int64  `json:"at"`   // µs from the run's start
	Kind string `json:"kind"` // allowed, denied or never
}

// shown is the compare view: the run's parameters and its lanes.
type shown struct {
	Start, Period, Rate, Burst, Cost int64
	Pattern                          string
	Lanes                            []shownLane
}

const shownJS = `(() => {
  const box = document.getElementById('cmp-lanes');
  const lanes = Array.from(box.querySelectorAll('.lane')).map((lane) => {
    const svg = lane.querySelector('svg').getBoundingClientRect();
    const marks = Array.from(lane.querySelectorAll('.mark'));
    const rects = marks.map((m) => m.getBoundingClientRect());
    const overlaps = [], outside = [];
    for (let i = 0; i < rects.length; i++) {
      const a = rects[i];
      if (a.width <= 0 || a.left < svg.left - 0.01 || a.right > svg.right + 0.01 || a.top < svg.top - 0.01 || a.bottom > svg.bottom + 0.01) outside.push(i);
      for (let j = i + 1; j < rects.length; j++) {
        const b = rects[j];
        if (a.left < b.right - 0.01 && b.left < a.right - 0.01 && a.top < b.bottom - 0.01 && b.top < a.bottom - 0.01) overlaps.push(i + '/' + j);
      }
    }
    const totals = {};
    for (const t of lane.querySelectorAll('.total')) totals[t.dataset.k] = Number(t.dataset.v);
    return {
      algorithm: lane.dataset.algorithm,
      marks: marks.map((m) => ({ at: Number(m.dataset.at), kind: ['allowed', 'denied', 'never'].find((k) => m.classList.contains(k)) || '' })),
      totals, overlaps: overlaps.slice(0, 5), outside: outside.slice(0, 5),
      titles: marks.map((m) => (m.querySelector('title') || {}).textContent || ''),
    };
  });
  const d = box.dataset;
  return { Start: Number(d.start), Period: Number(d.period), Rate: Number(d.rate), Burst: Number(d.burst), Cost: Number(d.cost), Pattern: d.pattern, Lanes: lanes };
})()`

// oracle decides the page's requests again, with the scripts alone: each
// algorithm's binding on a miniredis of the test's own, whose TIME is the
// run's start, called with the run's caller clock at each mark's instant.
// It returns each lane's kinds of mark and totals.
func oracle(t *testing.T, s shown) map[string]shownLane {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(time.UnixMicro(s.Start))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	period := time.Duration(s.Period) * time.Microsecond
	type reply struct {
		allowed bool
		retry   time.Duration
	}
	calls := map[string]func(key string, now time.Time) (reply, error){
		"gcra": func(k string, now time.Time) (reply, error) {
			r, err := bindings.GCRA(ctx, rdb, []string{k}, bindings.GCRAParams{Burst: s.Burst, Rate: s.Rate, Period: period, Now: now,
				Take: bindings.GCRATakeAll, Requests: []bindings.GCRARequest{{Cost: s.Cost}}})
			if err != nil {
				return reply{}, err
			}
			return reply{r.Decisions[0].Allowed == 1, r.Decisions[0].RetryAfter}, nil
		},
		"token_bucket": func(k string, now time.Time) (reply, error) {
			r, err := bindings.TokenBucket(ctx, rdb, []string{k}, bindings.TokenBucketParams{Capacity: s.Burst, Rate: s.Rate, Period: period, Now: now,
				Refill: bindings.TokenBucketRefillSmooth, Requests: []bindings.TokenBucketRequest{{Cost: s.Cost}}})
			if err != nil {
				return reply{}, err
			}
			return reply{r.Decisions[0].Allowed == 1, r.Decisions[0].RetryAfter}, nil
		},
		"token_bucket_interval": func(k string, now time.Time) (reply, error) {
			r, err := bindings.TokenBucket(ctx, rdb, []string{k}, bindings.TokenBucketParams{Capacity: s.Burst, Rate: s.Rate, Period: period, Now: now,
				Refill: bindings.TokenBucketRefillInterval, Requests: []bindings.TokenBucketRequest{{Cost: s.Cost}}})
			if err != nil {
				return reply{}, err
			}
			return reply{r.Decisions[0].Allowed == 1, r.Decisions[0].RetryAfter}, nil
		},
		"leaky_bucket": func(k string, now time.Time) (reply, error) {
			r, err := bindings.LeakyBucket(ctx, rdb, k, bindings.LeakyBucketParams{Capacity: s.Burst, Rate: s.Rate, Period: period, Cost: s.Cost, Now: now})
			return reply{r.Allowed, r.RetryAfter}, err
		},
		"fixed_window": func(k string, now time.Time) (reply, error) {
			r, err := bindings.FixedWindow(ctx, rdb, k, bindings.FixedWindowParams{Limit: s.Rate, Window: period, Cost: s.Cost, Now: now})
			return reply{r.Allowed, r.RetryAfter}, err
		},
		"sliding_window_log": func(k string, now time.Time) (reply, error) {
			r, err := bindings.SlidingWindowLog(ctx, rdb, k, bindings.SlidingWindowLogParams{Limit: s.Rate, Window: period, Cost: s.Cost, Now: now})
			return reply{r.Allowed, r.RetryAfter}, err
		},
		"sliding_window_counter": func(k string, now time.Time) (reply, error) {
			r, err := bindings.SlidingWindowCounter(ctx, rdb, k, bindings.SlidingWindowCounterParams{Limit: s.Rate, Window: period, Cost: s.Cost, Now: now})
			return reply{r.Allowed, r.RetryAfter}, err
		},
	}
	want := map[string]shownLane{}
	for _, l := range s.Lanes {
		call, ok := calls[l.Algorithm]
		if !ok {
			t.Fatalf("the page shows an algorithm the test does not know: %q", l.Algorithm)
		}
		w := shownLane{Algorithm: l.Algorithm, Totals: map[string]int64{}}
		var admitted []int64
		for _, mk := range l.Marks {
			r, err := call("oracle:{"+l.Algorithm+"}", time.UnixMicro(s.Start+mk.At))
			if err != nil {
				t.Fatalf("%s at %d µs: %v", l.Algorithm, mk.At, err)
			}
			kind := "denied"
			switch {
			case r.allowed:
				kind = "allowed"
				admitted = append(admitted, mk.At)
			case r.retry == -time.Millisecond:
				kind = "never"
			}
			w.Marks = append(w.Marks, shownMark{At: mk.At, Kind: kind})
			w.Totals[map[string]string{"allowed": "admitted", "denied": "denied", "never": "never"}[kind]]++
		}
		// The most cost admitted within any span of one period.
		var most int64
		for i := range admitted {
			n := int64(0)
			for _, at := range admitted[i:] {
				if at < admitted[i]+s.Period {
					n++
				}
			}
			most = max(most, n*s.Cost)
		}
		w.Totals["maxInPeriod"] = most
		if w.Totals["never"] == 0 {
			delete(w.Totals, "never") // the page leaves a zero out
		}
		for _, k := range []string{"admitted", "denied"} {
			w.Totals[k] += 0
		}
		want[l.Algorithm] = w
	}
	return want
}

// runPattern picks a pattern (after setting the limit's fields) and waits
// for the page to draw the run it asked for.
func runPattern(t *testing.T, ctx context.Context, fields map[string]string, pattern string) shown {
	t.Helper()
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.compared || ''`))
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) > 0 {
		if err := setCompareFields(ctx, fields); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#cmp-patterns button[data-pattern=%q]`, pattern)))); err != nil {
		t.Fatal(err)
	}
	// The click asks for a run at once, the fields once they rest: wait
	// until none is pending and the newest is drawn.
	js := fmt.Sprintf(`!compare.timer && (document.body.dataset.compared || '') !== %q && document.body.dataset.compared === String(compare.asked) && document.getElementById('cmp-lanes').dataset.pattern === %q`, before, pattern)
	// A dense run is some 3000 script calls: seconds on a loaded machine.
	if err := waitFor(ctx, js, 60*time.Second); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('cmp-error').textContent`))
		t.Fatalf("the %s pattern was not drawn: %v (error shown: %q)", pattern, err, msg)
	}
	s, err := chromedp.Run(ctx, chromedp.Evaluate[shown](shownJS))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setCompareFields(ctx context.Context, fields map[string]string) error {
	var b strings.Builder
	for id, v := range fields {
		fmt.Fprintf(&b, "document.getElementById(%q).value = %q; document.getElementById(%q).dispatchEvent(new Event('input'));\n", id, v, id)
	}
	return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](b.String()))
}

// checkLanes holds every lane the page drew to the scripts' own answers,
// and to the drawing's promises: seven lanes, no mark over another, every
// mark inside its lane, a denial for good drawn and titled as such.
func checkLanes(t *testing.T, s shown) map[string]shownLane {
	t.Helper()
	if len(s.Lanes) != 7 {
		t.Fatalf("%d lanes, want 7", len(s.Lanes))
	}
	want := oracle(t, s)
	got := map[string]shownLane{}
	for _, l := range s.Lanes {
		if len(l.Overlaps) > 0 || len(l.Outside) > 0 {
			t.Errorf("%s/%s: marks overlap (%v) or leave the lane (%v)", s.Pattern, l.Algorithm, l.Overlaps, l.Outside)
		}
		for i, m := range l.Marks {
			never := strings.Contains(l.Titles[i], "can never pass")
			if (m.Kind == "never") != never {
				t.Errorf("%s/%s: mark %d is %s, titled %q", s.Pattern, l.Algorithm, i, m.Kind, l.Titles[i])
			}
		}
		got[l.Algorithm] = shownLane{Algorithm: l.Algorithm, Marks: l.Marks, Totals: l.Totals}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the page against the scripts' own answers (-scripts +page):\n%s", s.Pattern, diff)
	}
	return got
}

// phoneFits fails when the page is wider than the phone's width: it
// scrolls sideways, or something sticks out (what lies inside a scrolling
// box, such as the request log, may be wider). The width is the device's,
// not innerWidth: a mobile browser widens its layout viewport to content
// that does not fit (and zooms out).
func phoneFits(t *testing.T, ctx context.Context, width int64) {
	t.Helper()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Inner, Scroll int
		Out           []string
	}](`((width) => {
	  const out = [];
	  for (const e of document.querySelectorAll('body *')) {
	    if (e.closest('.scroll') || e.closest('svg[width="0"]')) continue;
	    const r = e.getBoundingClientRect();
	    if (r.width > 0 && (r.right > width + 0.5 || r.left < -0.5)) out.push((e.id || e.tagName) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
	  }
	  return {Inner: window.innerWidth, Scroll: document.documentElement.scrollWidth, Out: out.slice(0, 8)};
	})(`+strconv.FormatInt(width, 10)+`)`))
	if err != nil {
		t.Fatal(err)
	}
	if int64(r.Scroll) > width || int64(r.Inner) > width || len(r.Out) > 0 {
		t.Errorf("on a phone %d px wide the page is %d px wide (layout viewport %d); sticking out: %v", width, r.Scroll, r.Inner, r.Out)
	}
}

func TestCompareView(t *testing.T) {
	chromium := findChromium(t)
	d := startDemo(t)
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 1000, false}, {"phone", 390, 844, true}} {
		t.Run(size.name, func(t *testing.T) {
			ctx := newBrowser(t, chromium)
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if size.mobile {
				opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(3), chromedp.EmulateMobile}
			}
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height, opts...)); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(d.url)); err != nil {
				t.Fatal(err)
			}
			// The page opens on the compare view, with the boundary attack drawn.
			if err := waitFor(ctx, `document.body.dataset.ready === 'true' && document.body.dataset.compared === '1'`, 30*time.Second); err != nil {
				t.Fatalf("the page did not open on a drawn comparison: %v", err)
			}
			first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main > section').id + ' ' + document.getElementById('cmp-lanes').dataset.pattern`))
			if err != nil || first != "compare boundary" {
				t.Errorf("the page opens on %q, want the compare view's boundary attack", first)
			}

			limit := map[string]string{"cmp-rate": "4", "cmp-period": "2s", "cmp-burst": "4", "cmp-cost": "1"}
			s := runPattern(t, ctx, limit, "boundary")
			lanes := checkLanes(t, s)
			// The promise, from real decisions: the fixed window lets
			// 2× its limit through within one period, the sliding log exactly
			// its limit.
			if got := lanes["fixed_window"].Totals["maxInPeriod"]; got != 2*s.Rate {
				t.Errorf("boundary attack: the fixed window admitted %d in one period, want %d", got, 2*s.Rate)
			}
			if got := lanes["sliding_window_log"].Totals["maxInPeriod"]; got != s.Rate {
				t.Errorf("boundary attack: the sliding log admitted %d in one period, want %d", got, s.Rate)
			}
			if size.mobile {
				phoneFits(t, ctx, size.width)
			}
			// make screenshot: the README's picture is this run, on a desktop.
			if path := os.Getenv("REDLIMIT_SCREENSHOT"); path != "" && !size.mobile {
				png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("compare")))
				if err == nil {
					err = os.WriteFile(path, png, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s (%d bytes)", path, len(png))
			}

			for _, p := range []string{"burst", "steady", "trickle"} {
				s := runPattern(t, ctx, nil, p)
				checkLanes(t, s)
			}
			// A dense run: 200 requests at one instant, marks still apart.
			s = runPattern(t, ctx, map[string]string{"cmp-rate": "100", "cmp-burst": "100", "cmp-period": "1s"}, "burst")
			checkLanes(t, s)
			if size.mobile {
				// The panels below too, with their widest content drawn.
				clickID(t, ctx, "two-run")
				if err := waitFor(ctx, `document.body.dataset.two === 'done'`, 30*time.Second); err != nil {
					t.Fatal(err)
				}
				clickID(t, ctx, "cache-hammer")
				phoneFits(t, ctx, size.width)
			}

			// A cost above the limit: every request can never pass, and the
			// page says so (checkLanes holds each mark's kind and title).
			s = runPattern(t, ctx, map[string]string{"cmp-rate": "4", "cmp-burst": "4", "cmp-period": "2s", "cmp-cost": "5"}, "trickle")
			for _, l := range checkLanes(t, s) {
				if l.Totals["never"] != int64(len(l.Marks)) || l.Totals["denied"] != 0 {
					t.Errorf("cost 5 over a limit of 4: %s shows %v", l.Algorithm, l.Totals)
				}
			}
			if err := setCompareFields(ctx, map[string]string{"cmp-cost": "1"}); err != nil {
				t.Fatal(err)
			}

			// Replay my taps: what was tapped, decided by the scripts.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cmp-patterns button[data-pattern="replay"]`))); err != nil {
				t.Fatal(err)
			}
			for range 7 {
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#tap"))); err != nil {
					t.Fatal(err)
				}
			}
			s = runPattern(t, ctx, nil, "replay")
			if n := len(s.Lanes[0].Marks); n != 7 {
				t.Errorf("7 taps replayed as %d requests", n)
			}
			checkLanes(t, s)

			// A limit the compare view refuses says why, and draws nothing.
			if err := setCompareFields(ctx, map[string]string{"cmp-period": "1h"}); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(ctx, `!document.getElementById('cmp-error').hidden && document.getElementById('cmp-error').textContent.includes('period: 1h0m0s') && !document.querySelector('#cmp-lanes .lane')`, 10*time.Second); err != nil {
				t.Errorf("a period of 1h: no error shown, or lanes left drawn: %v", err)
			}
		})
	}
	d.stop(t)
}
