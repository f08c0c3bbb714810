package polyglot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// skipped reads how many tests a runner says it skipped, when some were.
var skipped = map[string]*regexp.Regexp{
	"python": regexp.MustCompile(`(?m)^OK \(skipped=(\d+)\)$`),
	"node":   regexp.MustCompile(`(?m)^# skip ([1-9]\d*)$`),
}

// ran reads how many tests each runner says passed: a runner that found no
// tests exits 0 too.
var ran = map[string]*regexp.Regexp{
	"python": regexp.MustCompile(`(?m)^Ran (\d+) tests? in`),
	"node":   regexp.MustCompile(`(?m)^# pass (\d+)$`),
}

// TestUnitTests runs each example's own unit tests (manifest handling
// with a fake client): python -m unittest and node --test.
func TestUnitTests(t *testing.T) {
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			cmd := l.unit(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
			}
			n := 0
			if m := ran[l.name].FindSubmatch(out); m != nil {
				n, _ = strconv.Atoi(string(m[1]))
			}
			if n == 0 {
				t.Fatalf("%s ran no test:\n%s", strings.Join(cmd.Args, " "), out)
			}
			// A test that skipped says why; where everything is required
			// the runner has already failed it (the examples read CI and
			// REDLIMIT_REQUIRE_REDIS too).
			if m := skipped[l.name].FindSubmatch(out); m != nil {
				missing(t, fmt.Sprintf("%s of %s's unit tests skipped", m[1], l.name), "see the SKIP lines of: go test -v -run TestUnitTests ./tests/polyglot/")
			}
			t.Logf("%s\n%s", strings.Join(cmd.Args, " "), out)
		})
	}
}
