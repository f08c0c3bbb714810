package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

func clickID(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	if err := waitFor(ctx, `!document.getElementById('`+id+`').disabled`, 20*time.Second); err != nil {
		t.Fatalf("%s stays busy: %v", id, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(id))); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `!document.getElementById('`+id+`').disabled`, 30*time.Second); err != nil {
		t.Fatalf("after %s the page stays busy: %v", id, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// TestFeatures drives the panels of what only redlimit has, as a user
// would, and checks what each shows.
func TestFeatures(t *testing.T) {
	chromium := findChromium(t)
	d := startDemo(t)
	ctx := newBrowser(t, chromium)
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `document.body.dataset.ready === 'true'`, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	t.Run("two limits", func(t *testing.T) {
		clickID(t, ctx, "two-run")
		if err := waitFor(ctx, `document.body.dataset.two === 'done'`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		lanes := eval[map[string]map[string]int](t, ctx, `Object.fromEntries(Array.from(document.querySelectorAll('#two-lanes .lane')).map((l) =>
		  [l.dataset.strategy, Object.fromEntries(Array.from(l.querySelectorAll('.total')).map((t) => [t.dataset.k, Number(t.dataset.v)]).concat([['marks', l.querySelectorAll('.mark').length]]))]))`)
		multi, all := lanes["multi"], lanes["all"]
		if multi["marks"] != 80 || all["marks"] != 80 || multi["admitted"]+multi["denied"] != 80 {
			t.Fatalf("lanes %v", lanes)
		}
		if multi["wasted"] != 0 || all["wasted"] == 0 || all["admitted"] >= multi["admitted"] {
			t.Errorf("the Atomic rule should waste nothing and admit more than All: %v", lanes)
		}
		overlaps := eval[int](t, ctx, `(() => { let n = 0; for (const l of document.querySelectorAll('#two-lanes .lane')) {
		  const r = Array.from(l.querySelectorAll('.mark')).map((m) => m.getBoundingClientRect());
		  for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++)
		    if (r[i].left < r[j].right - 0.01 && r[j].left < r[i].right - 0.01 && r[i].top < r[j].bottom - 0.01 && r[j].top < r[i].bottom - 0.01) n++;
		} return n; })()`)
		if overlaps != 0 {
			t.Errorf("%d pairs of marks overlap", overlaps)
		}
	})

	t.Run("tier switch", func(t *testing.T) {
		for range 4 {
			clickID(t, ctx, "tier-send")
		}
		clickID(t, ctx, "tier-switch")
		clickID(t, ctx, "tier-send")
		clickID(t, ctx, "tier-unknown")
		got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#tier-log li[data-seq]')).reverse().map((li) => li.dataset.status + ' ' + li.textContent)`)
		var status []string
		for _, g := range got {
			status = append(status, g[:3])
		}
		if diff := cmp.Diff([]string{"200", "200", "200", "429", "200", "401"}, status); diff != "" {
			t.Errorf("the log (-want +got):\n%s\n%q", diff, got)
		}
		if len(got) == 6 && (!strings.Contains(got[4], "alice (pro)") || !strings.Contains(got[4], `r=6`) || !strings.Contains(got[5], "unknown API key")) {
			t.Errorf("after the upgrade %q, with an unknown key %q", got[4], got[5])
		}
	})

	t.Run("deny cache", func(t *testing.T) {
		clickID(t, ctx, "cache-hammer")
		rows := eval[[][]string](t, ctx, `Array.from(document.querySelectorAll('#cache-table tbody tr')).map((tr) => Array.from(tr.cells).map((c) => c.textContent))`)
		want := [][]string{
			{"without a deny cache", "100", "5", "0", "100"},
			{"WithDenyCache(10000)", "100", "5", "94", "6"},
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("the table (-want +got):\n%s", diff)
		}
		if saved := eval[string](t, ctx, `document.getElementById('cache-saved').textContent`); !strings.Contains(saved, "saved: 94 of 100") {
			t.Errorf("the page says %q", saved)
		}
	})

	t.Run("redis down", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("outage-down"))); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `document.getElementById('outage-down').checked`, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		clickID(t, ctx, "outage-send")
		got := eval[map[string]string](t, ctx, `Object.fromEntries(Array.from(document.querySelectorAll('#outage-lanes .policy')).map((p) =>
		  [p.dataset.policy, Array.from(p.querySelectorAll('.answer')).map((a) => a.textContent).join(' ')]))`)
		want := map[string]string{
			"no fallback":    "503 503 503 503 503",
			"FailOpen":       "200 200 200 200 200",
			"FailClosed":     "503 503 503 503 503",
			"FailLocal(0.5)": "200 200 429 429 429",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Redis down (-want +got):\n%s", diff)
		}
		clickID(t, ctx, "outage-reset")
		if eval[bool](t, ctx, `document.getElementById('outage-down').checked`) {
			t.Error("after a reset the switch still says down")
		}
	})

	t.Run("leases", func(t *testing.T) {
		clickID(t, ctx, "lease-job")
		clickID(t, ctx, "lease-crash")
		clickID(t, ctx, "lease-job")
		clickID(t, ctx, "lease-job")
		slots := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#lease-slots .slot')).map((s) => s.className)`)
		if diff := cmp.Diff([]string{"slot held", "slot held crashed", "slot held"}, slots); diff != "" {
			t.Errorf("slots (-want +got):\n%s", diff)
		}
		if last := eval[string](t, ctx, `document.getElementById('lease-last').textContent`); !strings.Contains(last, "denied, 0 of 3 left") {
			t.Errorf("the fourth job: %q", last)
		}
		// The two jobs release their leases; the crashed one holds on.
		if err := waitFor(ctx, `Array.from(document.querySelectorAll('#lease-slots .slot')).map((s) => s.className).join() === 'slot held crashed,slot,slot'`, 20*time.Second); err != nil {
			t.Errorf("the jobs' releases are not shown: %v", err)
		}
	})

	d.stop(t)
}
