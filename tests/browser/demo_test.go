// Package browser drives the demo page in a real headless Chromium. It is
// a module of its own because chromedp needs a newer Go than the main
// module's go line, which consumers of luagen inherit.
package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/redlimit/redlimit/internal/child"
)

func required() bool {
	return os.Getenv("CI") != "" || os.Getenv("REDLIMIT_REQUIRE_REDIS") == "1"
}

// findChromium returns the browser to drive: $REDLIMIT_CHROMIUM, or
// Debian's chromium (what .ci/run installs). Without one the test skips,
// loudly, unless CI or REDLIMIT_REQUIRE_REDIS=1 is set, where it fails.
func findChromium(t *testing.T) string {
	if p := os.Getenv("REDLIMIT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if required() {
		t.Fatal("no chromium on PATH (apt-get install -y chromium, or set REDLIMIT_CHROMIUM)")
	}
	t.Skip("*** no chromium on PATH: the browser test did NOT run (apt-get install -y chromium)")
	return ""
}

// demo is the real demo binary, running.
type demo struct {
	cmd  *exec.Cmd
	url  string
	out  chan string // the lines it prints after the first
	done chan error
}

// startDemo builds ./cmd/redlimit-demo and starts it on a free loopback
// port, reading the address it prints.
func startDemo(t *testing.T) *demo {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "redlimit-demo")
	build := exec.Command("go", "build", "-o", bin, "./cmd/redlimit-demo")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d := &demo{cmd: child.Tie(exec.Command(bin, "-listen", "127.0.0.1:0")), out: make(chan string, 16), done: make(chan error, 1)}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = os.Stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for n := 0; sc.Scan(); n++ {
			if n == 0 {
				first <- sc.Text()
			} else {
				d.out <- sc.Text()
			}
		}
		close(d.out)
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() { _ = d.cmd.Process.Kill() })
	select {
	case line := <-first:
		m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
		if m == "" {
			t.Fatalf("the demo printed %q, no URL", line)
		}
		d.url = m
	case <-time.After(60 * time.Second):
		t.Fatal("the demo printed no URL within a minute")
	}
	return d
}

// stop sends what Ctrl-C sends and expects a clean exit.
func (d *demo) stop(t *testing.T) {
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range d.out {
		lines = append(lines, l)
	}
	select {
	case err := <-d.done:
		if err != nil || len(lines) == 0 || lines[len(lines)-1] != "stopped" {
			t.Errorf("after Ctrl-C the demo exited with %v, printing %q", err, lines)
		}
	case <-time.After(15 * time.Second):
		t.Error("the demo did not stop within 15 s of Ctrl-C")
	}
}

func newBrowser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1200),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

// row is a request the page logged, as the page shows it.
type row struct {
	Seq        int    `json:"seq"`
	Status     int    `json:"status"`
	RetryAfter string `json:"retryAfter"`
	Remaining  string `json:"remaining"`
	Headers    string `json:"headers"`
}

const rowsJS = `Array.from(document.querySelectorAll('#log tbody tr')).map(tr => ({
  seq: Number(tr.dataset.seq), status: Number(tr.dataset.status),
  retryAfter: tr.dataset.retryAfter, remaining: tr.dataset.remaining,
  headers: tr.querySelector('td.headers').innerText}))`

func rowsAfter(t *testing.T, ctx context.Context, seq int) []row {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](rowsJS))
	if err != nil {
		t.Fatal(err)
	}
	var out []row
	for i := len(rows) - 1; i >= 0; i-- { // oldest first
		if rows[i].Seq > seq {
			out = append(out, rows[i])
		}
	}
	return out
}

func lastSeq(t *testing.T, ctx context.Context) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number((document.querySelector('#log tbody tr') || {dataset: {seq: 0}}).dataset.seq)`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func setFields(ctx context.Context, fields map[string]string) error {
	js, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	// As typing would, but all at once; the page reads its fields on input
	// events (and a disabled field cannot be typed into).
	return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
	  for (const [id, v] of Object.entries(`+string(js)+`)) document.getElementById(id).value = v;
	  document.getElementById('rate').dispatchEvent(new Event('input'));
	})()`))
}

// click clicks a button once the page is idle (it disables its buttons
// while a request runs), and waits until it is idle again, with rows more
// rows logged than before.
func click(t *testing.T, ctx context.Context, id string, rows int) {
	t.Helper()
	const idle = `!document.getElementById('send-one').disabled`
	if err := waitFor(ctx, idle, 20*time.Second); err != nil {
		t.Fatalf("the page stays busy: %v", err)
	}
	before := lastSeq(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(id))); err != nil {
		t.Fatal(err)
	}
	done := fmt.Sprintf(`%s && document.querySelectorAll('#log tbody tr').length >= %d`, idle, before+rows)
	if err := waitFor(ctx, done, 20*time.Second); err != nil {
		t.Fatalf("after %s the page is busy or did not log %d requests: %v", id, rows, err)
	}
}

func waitFor(ctx context.Context, js string, d time.Duration) error {
	c, cancel := context.WithTimeout(ctx, d+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(d)))
	return err
}

// allowedDeniedRefilled sends a burst one larger than the limit's, sees
// the last request denied with a Retry-After, watches the capacity the
// page shows come back, and sends one more that passes.
func allowedDeniedRefilled(t *testing.T, ctx context.Context, fields map[string]string, burst int) {
	if err := setFields(ctx, fields); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, "reset", 0)
	if err := waitFor(ctx, `document.getElementById('remaining').textContent === '`+strconv.Itoa(burst)+`'`, 10*time.Second); err != nil {
		t.Fatalf("the page never showed a full limiter of %d: %v", burst, err)
	}
	before := lastSeq(t, ctx)
	n := strconv.Itoa(burst + 1)
	if err := setFields(ctx, map[string]string{"n": n}); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, "send-burst", burst+1)
	rows := rowsAfter(t, ctx, before)
	if len(rows) != burst+1 {
		t.Fatalf("%d rows, want %d", len(rows), burst+1)
	}
	for i, r := range rows {
		want := 200
		if i == burst {
			want = 429
		}
		if r.Status != want {
			t.Fatalf("request %d of the burst: %d, want %d (rows %+v)", i+1, r.Status, want, rows)
		}
		if !strings.Contains(r.Headers, `RateLimit-Policy: "`+fields["algorithm"]+`";q=`+strconv.Itoa(burst)) {
			t.Errorf("request %d shows headers %q", i+1, r.Headers)
		}
	}
	if r := rows[burst-1]; r.Remaining != "0" {
		t.Errorf("the last allowed request shows %q left, want 0", r.Remaining)
	}
	denied := rows[burst]
	secs, err := strconv.Atoi(denied.RetryAfter)
	if err != nil || secs < 1 || !strings.Contains(denied.Headers, "Retry-After: "+denied.RetryAfter) {
		t.Fatalf("the denied request shows Retry-After %q, headers %q", denied.RetryAfter, denied.Headers)
	}
	// The live capacity, polled by the page, shows the limiter empty, then
	// comes back by itself. (Polls run one after another, so once one
	// shows 0, later ones show only what refilled since.)
	if err := waitFor(ctx, `document.getElementById('remaining').textContent === '0'`, 10*time.Second); err != nil {
		t.Fatalf("the capacity shown never reached 0 after the burst: %v", err)
	}
	if err := waitFor(ctx, `Number(document.getElementById('remaining').textContent) >= 1`, time.Duration(secs+10)*time.Second); err != nil {
		t.Fatalf("the capacity shown never came back after Retry-After %d s: %v", secs, err)
	}
	before = lastSeq(t, ctx)
	click(t, ctx, "send-one", 1)
	if rows := rowsAfter(t, ctx, before); len(rows) != 1 || rows[0].Status != 200 {
		t.Fatalf("after the refill: %+v, want one allowed request", rows)
	}
	// The chart drew both kinds of decision, and no mark hides another
	// (a burst lands within milliseconds: one pixel on the 30 s axis).
	chart, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Allowed, Denied int
		Overlaps        []string
	}](`(() => {
	  const rects = Array.from(document.querySelectorAll('#chart .mark')).map((m) => m.getBoundingClientRect());
	  const overlaps = [];
	  for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) {
	    const a = rects[i], b = rects[j];
	    if (a.left < b.right - 0.01 && b.left < a.right - 0.01 && a.top < b.bottom - 0.01 && b.top < a.bottom - 0.01) overlaps.push(i + '/' + j);
	  }
	  return {Allowed: document.querySelectorAll('#chart .mark.allowed').length, Denied: document.querySelectorAll('#chart .mark.denied').length, Overlaps: overlaps.slice(0, 5)};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if chart.Allowed < burst+1 || chart.Denied < 1 || len(chart.Overlaps) > 0 {
		t.Errorf("the chart shows %d allowed and %d denied marks (want at least %d and 1), overlapping: %v", chart.Allowed, chart.Denied, burst+1, chart.Overlaps)
	}
}

func TestDemoPage(t *testing.T) {
	chromium := findChromium(t)
	d := startDemo(t)
	ctx := newBrowser(t, chromium)
	// Every request the page makes goes to the demo itself (it works
	// offline) and finds what it asks for, bar the 429s of the limited
	// API.
	var mu sync.Mutex
	var stray []string
	// (chromedp enables the Network domain of every tab.)
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(ev.Request.URL, d.url) && !strings.HasPrefix(ev.Request.URL, "data:") {
				mu.Lock()
				stray = append(stray, "request to "+ev.Request.URL)
				mu.Unlock()
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 && !(ev.Response.Status == 429 && strings.Contains(ev.Response.URL, "/api/limited")) &&
				!(ev.Response.Status == 400 && strings.Contains(ev.Response.URL, "/api/")) {
				mu.Lock()
				stray = append(stray, fmt.Sprintf("%d for %s", ev.Response.Status, ev.Response.URL))
				mu.Unlock()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(d.url)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `document.body.dataset.ready === 'true'`, 30*time.Second); err != nil {
		t.Fatalf("the page did not load: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(stray) > 0 {
			t.Errorf("requests the page should not make or that failed: %v", stray)
		}
	})

	// The limits leave seconds between refills, so a loaded machine cannot
	// refill a unit while the burst is still being sent.
	t.Run("gcra", func(t *testing.T) {
		allowedDeniedRefilled(t, ctx, map[string]string{
			"algorithm": "gcra", "rate": "1", "period": "4s", "burst": "3", "client": "browser}{gcra", "cost": "1",
		}, 3)
	})
	t.Run("sliding_window_log", func(t *testing.T) {
		allowedDeniedRefilled(t, ctx, map[string]string{
			"algorithm": "sliding_window_log", "rate": "3", "period": "4s", "client": "browser-log", "cost": "1",
		}, 3)
	})
	t.Run("token_bucket", func(t *testing.T) {
		allowedDeniedRefilled(t, ctx, map[string]string{
			"algorithm": "token_bucket", "rate": "1", "period": "3s", "burst": "4", "client": "browser-tb", "cost": "1",
		}, 4)
	})

	// A cost above the burst can never pass, and the page says so instead
	// of showing a plain denial beside a full meter.
	t.Run("never", func(t *testing.T) {
		if err := setFields(ctx, map[string]string{"algorithm": "gcra", "rate": "1", "period": "4s", "burst": "3", "client": "browser-never", "cost": "5"}); err != nil {
			t.Fatal(err)
		}
		before := lastSeq(t, ctx)
		click(t, ctx, "send-one", 1)
		rows := rowsAfter(t, ctx, before)
		if len(rows) != 1 || rows[0].Status != 429 || rows[0].RetryAfter != "" {
			t.Fatalf("cost 5 over a burst of 3: %+v, want one 429 without Retry-After", rows)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
			Status, Note string
			Never        bool
			NeverMarks   int
		}](`(() => {
		  const tr = document.querySelector('#log tbody tr'), n = document.getElementById('never');
		  return {Status: tr.querySelector('td.status').textContent, Never: tr.dataset.never === 'true',
		    Note: n.hidden ? '' : n.textContent, NeverMarks: document.querySelectorAll('#chart .mark.never').length};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "429 can never pass" || !got.Never || !strings.Contains(got.Note, "can never pass") || got.NeverMarks != 1 {
			t.Errorf("a request that can never pass is shown as %+v", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tt := range []struct {
			fields map[string]string
			want   string
		}{
			{map[string]string{"algorithm": "gcra", "rate": "abc", "period": "1s", "burst": "3"}, `rate: "abc" is not a whole number`},
			{map[string]string{"algorithm": "gcra", "rate": "0", "period": "1s", "burst": "3"}, "Rate must be from 1 to 1e9"},
			{map[string]string{"algorithm": "gcra", "rate": "3", "period": "1.5ms", "burst": "3"}, "Period must be a whole number of milliseconds"},
			{map[string]string{"algorithm": "token_bucket", "rate": "3", "period": "soon", "burst": "3"}, `period: "soon" is not a duration`},
		} {
			if err := setFields(ctx, tt.fields); err != nil {
				t.Fatal(err)
			}
			click(t, ctx, "send-one", 0)
			js := `!document.getElementById('error').hidden && document.getElementById('error').textContent.includes(` + strconv.Quote(tt.want) + `)`
			if err := waitFor(ctx, js, 10*time.Second); err != nil {
				shown, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("error")))
				t.Errorf("%v: the page shows %q, want %q", tt.fields, shown, tt.want)
			}
			// Nothing of the last good limiter stays on show.
			stale := `document.getElementById('redis-key').textContent === '–' && document.getElementById('remaining').textContent === '–' && ['', '0', '0px'].includes(document.getElementById('meter-fill').style.width)`
			if err := waitFor(ctx, stale, 10*time.Second); err != nil {
				t.Errorf("%v: the Redis key or the meter of the previous limiter stays on show", tt.fields)
			}
		}
		// Good input again: the message goes away.
		if err := setFields(ctx, map[string]string{"algorithm": "gcra", "rate": "3", "period": "1s", "burst": "3"}); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `document.getElementById('error').hidden`, 10*time.Second); err != nil {
			t.Error("the message stays after the input is fixed")
		}
	})

	d.stop(t)
}
