package ratelimit

import (
	"testing"
	"time"
)

// combine reads as the part that binds: among denials the longest wait
// (Never first), else the least Remaining; a fallback's decision
// binds only when no decision from Redis does.
func TestCombine(t *testing.T) {
	down := ErrUnavailable
	for _, tt := range []struct {
		ds      []Decision
		want    int // the binding part, -1 for none
		allowed bool
	}{
		{nil, -1, true},
		{[]Decision{{Allowed: true, Remaining: 5}, {Allowed: true, Remaining: 2}, {Allowed: true, Remaining: 3}}, 1, true},
		{[]Decision{{Allowed: true}, {RetryAfter: time.Second}, {RetryAfter: time.Minute}, {Allowed: true}}, 2, false},
		{[]Decision{{RetryAfter: time.Hour}, {RetryAfter: Never}}, 1, false},
		{[]Decision{{Allowed: true, Fallback: FailOpen, Cause: down}, {Allowed: true, Remaining: 9}}, 1, true},
		{[]Decision{{Allowed: true, Remaining: 0}, {Fallback: FailClosed, Cause: down}}, 1, false},
		{[]Decision{{Fallback: FailClosed, Cause: down}, {RetryAfter: time.Second}}, 1, false},
	} {
		for i := range tt.ds {
			tt.ds[i].Name = string(rune('a' + i))
		}
		got := combine(tt.ds)
		if got.Allowed != tt.allowed {
			t.Errorf("combine(%v).Allowed = %v", tt.ds, got.Allowed)
		}
		switch {
		case tt.want < 0 && got.Name != "":
			t.Errorf("combine(%v) = %v, want no limit", tt.ds, got)
		case tt.want >= 0 && got.Name != tt.ds[tt.want].Name:
			t.Errorf("combine(%v) binds %q, want %q", tt.ds, got.Name, tt.ds[tt.want].Name)
		case tt.want >= 0 && len(got.Parts) != len(tt.ds):
			t.Errorf("combine(%v) has %d parts", tt.ds, len(got.Parts))
		}
	}
	// Parts of parts are flattened, and nameless (Unlimited) ones dropped.
	inner := combine([]Decision{{Name: "x", Allowed: true}, {Name: "y", Allowed: true}})
	if got := combine([]Decision{inner, {Allowed: true}, {Name: "z", Allowed: true}}); len(got.Parts) != 3 {
		t.Errorf("flattened: %d parts, want x, y, z", len(got.Parts))
	}
}
