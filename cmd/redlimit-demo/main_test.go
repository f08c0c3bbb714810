package main

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the quick start's demo against an embedded miniredis: every
// limiter admits the first 5 of 8 requests, denies 3, and admits again once
// its Retry-After has passed.
func TestDemo(t *testing.T) {
	rdb, stop, err := connect("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	srv := httptest.NewServer(handler(rdb))
	defer srv.Close()

	var out strings.Builder
	if err := run(&out, srv.URL, 8); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^(\w+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.+?)\s*$`)
	rows := 0
	for _, m := range row.FindAllStringSubmatch(out.String(), -1) {
		if m[1] == "limiter" {
			continue
		}
		rows++
		if m[2] != "5" || m[3] != "3" || m[5] != "200 OK" {
			t.Errorf("%s: admitted %s, denied %s, then %q; want 5, 3, then 200 OK", m[1], m[2], m[3], m[5])
		}
	}
	if rows != len(limiters) {
		t.Errorf("%d rows for %d limiters:\n%s", rows, len(limiters), out.String())
	}
}
