package peercopy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompare(t *testing.T) {
	peer := []string{"package p", "", "func A() {}", "func B() {}", "func C() {}"}
	license := []string{"Copyright (c) 2013 Someone", "", "Permission is granted."}
	header := []string{"// Copied from the peer.", "//", "// Copyright (c) 2013 Someone", "//", "// Permission is granted.", ""}
	with := func(body ...string) []string { return append(append([]string{}, header...), body...) }
	for _, c := range []struct {
		name     string
		ours     []string
		ids      []string
		problems []string // substrings, one per problem
	}{
		{name: "unchanged", ours: with(peer...)},
		{name: "marked change", ours: with("package p", "", "func A() { x() } // redlimit: D1 why", "func B() {}", "func C() {}"), ids: []string{"D1"}},
		{name: "marked insertion", ours: with("package p", "// redlimit: adapted, because", "", "func A() {}", "func B() {}", "func C() {}")},
		{name: "two ids, repeated", ours: with("package p", "", "a // redlimit: D2", "b // redlimit: D1", "c // redlimit: D2"), ids: []string{"D2", "D1"}},
		{name: "added blank line", ours: with("package p", "", "", "func A() {}", "func B() {}", "func C() {}")},
		{name: "dropped blank line", ours: with("package p", "func A() {}", "func B() {}", "func C() {}"), problems: []string{"lines 2-2 are dropped"}},
		{name: "unmarked change", ours: with("package p", "", "func A() { x() }", "func B() {}", "func C() {}"), problems: []string{"line 9 differs"}},
		{name: "dropped line", ours: with("package p", "", "func A() {}", "func C() {}"), problems: []string{"lines 4-4 are dropped"}},
		{name: "no license", ours: append([]string{"// Copied."}, peer...), problems: []string{"lacks the peer's LICENSE line"}},
		{name: "license out of order", ours: append([]string{"// Permission is granted.", "// Copyright (c) 2013 Someone"}, peer...), problems: []string{"lacks"}},
		{name: "not a copy", ours: with("package q"), problems: []string{"no line is the peer's first line"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, problems := compare(c.ours, peer, license)
			if diff := cmp.Diff(c.ids, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if len(problems) != len(c.problems) {
				t.Fatalf("got problems %q, want %d matching %q", problems, len(c.problems), c.problems)
			}
			for i, p := range problems {
				if !strings.Contains(p, c.problems[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p, c.problems[i])
				}
			}
		})
	}
}
