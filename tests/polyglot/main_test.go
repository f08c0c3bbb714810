// Package polyglot runs the Python and Node examples (examples/python,
// examples/node) as their users would, against a real redis-server, and
// holds every decision they print to the Go bindings' decisions for the
// same calls.
//
// The examples need an interpreter and their Redis client: Python with
// redis-py (Debian's python3-redis is for /usr/bin/python3, which is tried
// first; REDLIMIT_PYTHON names another interpreter) and Node with the
// packages of examples/node (npm ci). Where one is missing, its tests skip
// and say how to fix it, unless CI is set or REDLIMIT_REQUIRE_REDIS=1:
// then they fail, so CI never passes without running them.
package polyglot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlimit/redlimit/internal/redisserver"
)

var (
	root = func() string {
		abs, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			panic(err)
		}
		return abs
	}()

	notRun   = map[string]string{} // what did not run, and how to fix it
	notRunMu sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if len(notRun) > 0 {
		var lines []string
		for what, fix := range notRun {
			lines = append(lines, fmt.Sprintf("***   %s: %s", what, fix))
		}
		sort.Strings(lines)
		fmt.Fprintf(os.Stderr, "\n*** polyglot examples did NOT run:\n%s\n\n", strings.Join(lines, "\n"))
	}
	os.Exit(code)
}

// missing fails the test where CI requires everything, and otherwise
// skips it, saying what is missing and the command that fixes it.
func missing(t *testing.T, what, fix string) {
	t.Helper()
	if redisserver.Required() {
		t.Fatalf("%s, and CI or REDLIMIT_REQUIRE_REDIS=1 requires it: %s", what, fix)
	}
	notRunMu.Lock()
	notRun[what] = fix
	notRunMu.Unlock()
	t.Skipf("SKIPPED: %s (fix: %s)", what, fix)
}

// A lang is one example: how to run its CLI and its unit tests.
type lang struct {
	name string
	cli  func(t *testing.T) []string // the command line before the CLI's own arguments
	unit func(t *testing.T) *exec.Cmd
}

var langs = []lang{
	{
		name: "python",
		cli: func(t *testing.T) []string {
			return []string{python(t), filepath.Join(root, "examples", "python", "demo.py")}
		},
		unit: func(t *testing.T) *exec.Cmd {
			cmd := exec.Command(python(t), "-m", "unittest", "discover", "-v", "-s", filepath.Join(root, "examples", "python"))
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // leave the checkout as it was
			// The FastAPI example's tests need a Redis (and fail under CI
			// without one, or without FastAPI).
			if addr := redisserver.Maybe(t); addr != "" {
				cmd.Env = append(cmd.Env, "REDLIMIT_TEST_REDIS="+addr)
			}
			return cmd
		},
	},
	{
		name: "node",
		cli: func(t *testing.T) []string {
			return []string{node(t), filepath.Join(root, "examples", "node", "demo.js")}
		},
		unit: func(t *testing.T) *exec.Cmd {
			// TAP, which unit_test.go counts: Node 23 made the spec
			// reporter the default.
			cmd := exec.Command(node(t), "--test", "--test-reporter=tap")
			cmd.Dir = filepath.Join(root, "examples", "node")
			return cmd
		},
	},
}

// python finds an interpreter that can import redis-py: REDLIMIT_PYTHON if
// set, else /usr/bin/python3 (where Debian's python3-redis installs it;
// a python3 earlier on PATH, such as pyenv's, usually lacks it), else
// python3 on PATH.
func python(t *testing.T) string {
	t.Helper()
	var tried []string
	candidates := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("REDLIMIT_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+" (not found)")
			continue
		}
		if out, err := exec.Command(path, "-c", "import redis").CombinedOutput(); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%s)", path, lastLine(out)))
			continue
		}
		return path
	}
	missing(t, "no Python that can import redis-py (tried "+strings.Join(tried, ", ")+")",
		"apt-get install -y python3-redis (Debian's redis-py, for /usr/bin/python3), or pip install redis and set REDLIMIT_PYTHON to that python")
	return ""
}

// node finds node and the example's installed packages.
func node(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH", "install Node.js 20 or later")
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "node", "node_modules", "ioredis", "package.json")); err != nil {
		missing(t, "examples/node/node_modules has no ioredis", "(cd examples/node && npm ci)")
	}
	return path
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// A line is what an example's CLI prints per call with --json: the reply
// by its manifest names (durations in ms, "never" for never), or an error.
// gcra's and token_bucket's reply is their decisions, one per request.
type line struct {
	Script    string         `json:"script"`
	Via       string         `json:"via"`
	Call      int            `json:"call"`
	Decisions []lineDecision `json:"decisions"`
	Error     string         `json:"error"`
	Message   string         `json:"message"`
}

// lineDecision is one request's decision in a line.
type lineDecision struct {
	Allowed    json.RawMessage `json:"allowed"` // 1 or 0, "expired"
	Remaining  *int64          `json:"remaining"`
	RetryAfter json.RawMessage `json:"retry_after"`
	ResetAfter json.RawMessage `json:"reset_after"`
}

// A run is one run of an example's CLI.
type run struct {
	lines  []line
	stdout string
	stderr string
	code   int
}

func (r run) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs an example's CLI with args; with --json among them every
// stdout line must be JSON.
func cli(t *testing.T, prog []string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog[0], append(prog[1:], args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	for _, a := range args {
		if a != "--json" {
			continue
		}
		for _, s := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if s == "" {
				continue
			}
			var l line
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				t.Fatalf("%s: a line that is not JSON: %q (%v)\n%s", strings.Join(cmd.Args, " "), s, err, r)
			}
			r.lines = append(r.lines, l)
		}
	}
	return r
}
