// Package peercopy holds the compat modules to their promise that they run
// the peers' own suites: Check compares a copied file (redis_rate's
// rate_test.go, ulule's store tests) with the same file in the peer's
// released module, the zip go.sum verified, and fails unless every line
// that differs says why.
package peercopy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Marker starts the comment that every changed or added line of a copy
// carries: "// redlimit: <why>". A change that makes an assertion expect
// redlimit's answer instead of the peer's names a deliberate difference,
// "// redlimit: D<n> ...", which the module's doc lists.
const Marker = "redlimit:"

var differenceID = regexp.MustCompile(`redlimit: (D[0-9]+)\b`)

// Check compares the file at copyPath with file in the stored module of
// mod (at the version the test binary is built with) and returns the IDs
// of the deliberate differences its changed lines name, in order of first
// appearance. The copy is a header, then the peer's file. The header ends
// before the peer's first line and must hold the peer's LICENSE, line for
// line as comments (both peers' licenses require the notice in copies).
// After it, every line the peer's file does not have (by a longest-common-
// subsequence diff) must carry Marker or be blank, and no line of the
// peer's may be dropped without a marked line in its place.
func Check(t testing.TB, copyPath, mod, file string) []string {
	t.Helper()
	dir := moduleDir(t, mod)
	ids, problems := compare(lines(t, copyPath), lines(t, filepath.Join(dir, file)), lines(t, filepath.Join(dir, "LICENSE")))
	for _, p := range problems {
		t.Errorf("%s (against %s's %s): %s", copyPath, mod, file, p)
	}
	return ids
}

// compare is Check on the lines of the copy, the peer's file and its
// license: the difference IDs, and what is wrong.
func compare(ours, peer, license []string) (ids, problems []string) {
	start := -1
	for i, l := range ours {
		if l == peer[0] {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, []string{fmt.Sprintf("no line is the peer's first line %q", peer[0])}
	}
	header := ours[:start]
	h := 0
	for _, want := range license {
		want = strings.TrimSpace(want)
		if want == "" {
			continue
		}
		for h < len(header) && strings.TrimSpace(strings.TrimPrefix(header[h], "//")) != want {
			h++
		}
		if h == len(header) {
			return nil, []string{fmt.Sprintf("the header before line %d lacks the peer's LICENSE line %q (in order, as // comments)", start+1, want)}
		}
	}
	seen := map[string]bool{}
	for _, hk := range diff(peer, ours[start:]) {
		if len(hk.ours) == 0 {
			problems = append(problems, fmt.Sprintf("the peer's lines %d-%d are dropped without a %q line in their place: %s",
				hk.peerAt+1, hk.peerAt+len(hk.peer), Marker, strings.Join(hk.peer, " / ")))
		}
		for i, l := range hk.ours {
			// A blank line changes nothing (gofmt needs one to start an
			// import group).
			if l != "" && !strings.Contains(l, Marker) {
				problems = append(problems, fmt.Sprintf("line %d differs from the peer's and does not say why (%q): %s", start+hk.oursAt+i+1, Marker, l))
			}
			for _, m := range differenceID.FindAllStringSubmatch(l, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					ids = append(ids, m[1])
				}
			}
		}
	}
	return ids, problems
}

// moduleDir finds mod in the module cache at the version the go.mod of
// the test's module requires, which go.sum has verified against the
// released zip (go test runs a package's tests in its directory).
func moduleDir(t testing.TB, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", mod).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", mod, err)
	}
	var m struct {
		Dir     string
		Replace *struct{ Path string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("go list -m %s: %v", mod, err)
	}
	if m.Replace != nil {
		t.Fatalf("%s is replaced (%s): the copy must be checked against the released module", mod, m.Replace.Path)
	}
	if m.Dir == "" {
		t.Fatalf("%s is not in the module cache: run go mod download", mod)
	}
	return m.Dir
}

func lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// A hunk is a run of lines where the two files differ.
type hunk struct {
	peerAt, oursAt int
	peer, ours     []string
}

// diff returns the hunks between a and b by their longest common
// subsequence (the files are a few hundred lines: O(len(a)*len(b)) is
// fine).
func diff(a, b []string) []hunk {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hunks []hunk
	var cur *hunk
	flush := func() {
		if cur != nil {
			hunks = append(hunks, *cur)
			cur = nil
		}
	}
	open := func(i, j int) {
		if cur == nil {
			cur = &hunk{peerAt: i, oursAt: j}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			flush()
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			open(i, j)
			cur.ours = append(cur.ours, b[j])
			j++
		default:
			open(i, j)
			cur.peer = append(cur.peer, a[i])
			i++
		}
	}
	flush()
	return hunks
}
