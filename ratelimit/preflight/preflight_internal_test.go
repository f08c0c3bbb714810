package preflight

import (
	"strings"
	"testing"
	"time"
)

// A real server's clock cannot be moved in a test, so the judgement of an
// offset is tested alone; TestCheck shows a server on this machine's clock
// gets no clock finding.
func TestClockFinding(t *testing.T) {
	tests := []struct {
		offset, uncertainty time.Duration
		want                string // "" for no finding, else severity and a piece of Why
	}{
		{0, 0, ""},
		{900 * time.Millisecond, 0, ""},
		{-time.Second, 0, ""},
		{1500 * time.Millisecond, 600 * time.Millisecond, ""}, // may be off by 0.9 s only
		{1500 * time.Millisecond, 0, "warning 2s ahead of"},
		{-5 * time.Second, 0, "warning 5s behind"},
		{60 * time.Second, 0, "warning 1m0s ahead of"},
		{61 * time.Second, 0, "critical 1m1s ahead of"},
		{-90 * time.Second, 0, "critical 1m30s behind"},
		{61 * time.Second, 2 * time.Second, "warning 59s ahead of"},
	}
	for _, tt := range tests {
		f, ok := clockFinding("n:1", tt.offset, tt.uncertainty)
		if tt.want == "" {
			if ok {
				t.Errorf("offset %v ± %v: got %v, want no finding", tt.offset, tt.uncertainty, f)
			}
			continue
		}
		sev, piece, _ := strings.Cut(tt.want, " ")
		if !ok || f.Name != "clock" || f.Severity != sev || f.Node != "n:1" || !strings.Contains(f.Why, piece) {
			t.Errorf("offset %v ± %v: got %v (%v), want %s finding saying %q", tt.offset, tt.uncertainty, f, ok, sev, piece)
		}
	}
}
