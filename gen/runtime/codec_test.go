package runtime

import (
	"errors"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// encode runs f on a fresh call of echo.lua and returns what it would send
// and its error.
func encode(f func(e encoder)) ([]any, error) {
	e := newEncoder(echoInfo, nil)
	f(e)
	cl := e.call()
	return cl.args, cl.err
}

var leaseRE = regexp.MustCompile(`^(?:^[a-z]{1,4}$)$`)

func TestEncoder(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC)
	tests := []struct {
		name    string
		f       func(e encoder)
		want    []any
		wantErr string // the ArgError's text; "" for none
	}{
		{"int", func(e encoder) { e.int("n", 7, between(1, 10)) }, []any{int64(7)}, ""},
		{"int below", func(e encoder) { e.int("n", 0, atLeast(1)) }, []any{int64(0)}, "echo.lua: argument n: 0 is out of range [1..]"},
		{"int above", func(e encoder) { e.int("n", 11, atMost(10)) }, []any{int64(11)}, "echo.lua: argument n: 11 is out of range [..10]"},
		{"float plain decimal", func(e encoder) { e.float("f", 1e-7, nil) }, []any{"0.0000001"}, ""},
		{"float NaN", func(e encoder) { e.float("f", math.NaN(), nil) }, []any{"NaN"}, "echo.lua: argument f: NaN is not a finite number"},
		{"float range", func(e encoder) { e.float("f", 2.5, betweenF(0, 1)) }, []any{"2.5"}, "echo.lua: argument f: 2.5 is out of range [0..1]"},
		{"bool", func(e encoder) { e.bool(true); e.bool(false) }, []any{"1", "0"}, ""},
		{"string", func(e encoder) { e.string("a b") }, []any{"a b"}, ""},
		{"enum", func(e encoder) { e.enum("m", "peek", "count", "peek") }, []any{"peek"}, ""},
		{"enum not a word", func(e encoder) { e.enum("m", "Peek", "count", "peek") }, []any{}, `echo.lua: argument m: "Peek" is not one of count, peek`},
		{"ms", func(e encoder) { e.ms("d", 1500*time.Millisecond, nil) }, []any{int64(1500)}, ""},
		{"ms not whole", func(e encoder) { e.ms("d", 1500*time.Microsecond, nil) }, []any{int64(1)}, "echo.lua: argument d: 1.5ms is not a whole number of milliseconds"},
		{"s range", func(e encoder) { e.seconds("d", time.Hour, atMost(60)) }, []any{int64(3600)}, "echo.lua: argument d: 1h0m0s is out of range [..60] seconds"},
		{"us", func(e encoder) { e.us("d", time.Millisecond, nil) }, []any{int64(1000)}, ""},
		{"unix_ms rounds down", func(e encoder) { e.unixMs("t", at, nil) }, []any{at.Unix()*1000 + 999}, ""},
		{"unix_us zero is 0", func(e encoder) { e.unixUs("t", time.Time{}, atLeast(0)) }, []any{int64(0)}, ""},
		{"unix_s before the epoch", func(e encoder) { e.unixS("t", time.Unix(-5, 0), atLeast(0)) }, []any{int64(-5)}, "echo.lua: argument t: 1969-12-31T23:59:55Z is out of range [0..] seconds since the epoch"},
		{"sentinel", func(e encoder) { e.int("n", -1, between(1, 10).or(-1)) }, []any{int64(-1)}, ""},
		{"not a sentinel", func(e encoder) { e.int("n", -2, between(1, 10).or(-1, 0)) }, []any{int64(-2)}, "echo.lua: argument n: -2 is out of range [1..10] or -1 or 0"},
		{"count", func(e encoder) { e.count("keys", "keys", 17, between(1, 16)) }, []any{}, "echo.lua: argument keys: 17 keys is a count out of range [1..16]"},
		{"pattern", func(e encoder) { e.pattern("id", "abc", leaseRE) }, []any{"abc"}, ""},
		{"pattern mismatch", func(e encoder) { e.pattern("id", "abcde", leaseRE) }, []any{"abcde"}, `echo.lua: argument id: "abcde" does not match ^(?:^[a-z]{1,4}$)$`},
		{"first error wins", func(e encoder) { e.int("a", 0, atLeast(1)); e.int("b", 0, atLeast(1)) }, []any{int64(0), int64(0)}, "echo.lua: argument a: 0 is out of range [1..]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encode(tt.f)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			var ae *ArgError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantErr != "" && (!errors.As(err, &ae) || err.Error() != tt.wantErr):
				t.Errorf("err = %v, want *ArgError %q", err, tt.wantErr)
			}
		})
	}
}

// An enum's word is sent as the generated call's boxed constant: sending it
// allocates nothing, where boxing the caller's string would (one
// allocation and 16 bytes on every call of token_bucket.lua).
func TestEnumSendsNoAllocation(t *testing.T) {
	e := newEncoder(echoInfo, nil)
	v := string([]byte("peek")) // not a constant
	n := testing.AllocsPerRun(1000, func() {
		e.cl.args = e.cl.args[:0]
		e.enum("m", v, "count", "peek")
	})
	if n != 0 || len(e.cl.args) != 1 || e.cl.args[0] != "peek" || e.cl.err != nil {
		t.Errorf("enum: %v allocations, args %q, err %v; want 0, [peek], nil", n, e.cl.args, e.cl.err)
	}
}

type testRecord struct {
	N int64
	S string
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name    string
		reply   any
		n       int
		rest    bool
		f       func(d *decoder) any
		want    any
		wantErr string // the ReplyError's text
	}{
		{"bare scalar", int64(5), 1, false, func(d *decoder) any { return d.int(0, "n", nil) }, int64(5), ""},
		{"int from string", []any{"12"}, 1, false, func(d *decoder) any { return d.int(0, "n", nil) }, int64(12), ""},
		{"int not a number", []any{"x"}, 1, false, func(d *decoder) any { return d.int(0, "n", nil) }, int64(0), `echo.lua: reply element 1 (n): want int, got string "x"`},
		{"int out of bounds", []any{int64(-1)}, 1, false, func(d *decoder) any { return d.int(0, "n", atLeast(0)) }, int64(0), "echo.lua: reply element 1 (n): want an int in [0..], got int64 -1"},
		{"too few", []any{int64(1)}, 2, false, nil, nil, "echo.lua: reply: want 2 elements, got 1"},
		{"not an array", "x", 2, false, nil, nil, `echo.lua: reply: want an array, got string "x"`},
		{"rest too short", []any{}, 1, true, nil, nil, "echo.lua: reply: want at least 1 elements, got 0"},
		{"float forms", []any{"0.25", int64(2), 1.5}, 3, false, func(d *decoder) any {
			return []float64{d.float(0, "a", nil), d.float(1, "b", nil), d.float(2, "c", nil)}
		}, []float64{0.25, 2, 1.5}, ""},
		{"float bounds", []any{"2"}, 1, false, func(d *decoder) any { return d.float(0, "f", atMostF(1)) }, 0.0, `echo.lua: reply element 1 (f): want a float in [..1], got string "2"`},
		{"bool", []any{int64(1), int64(0), true}, 3, false, func(d *decoder) any {
			return []bool{d.bool(0, "a"), d.bool(1, "b"), d.bool(2, "c")}
		}, []bool{true, false, true}, ""},
		{"bool 2", []any{int64(2)}, 1, false, func(d *decoder) any { return d.bool(0, "a") }, false, "echo.lua: reply element 1 (a): want bool (1 or 0), got int64 2"},
		{"nil string", []any{nil}, 1, false, func(d *decoder) any { return d.string(0, "s") }, "", "echo.lua: reply element 1 (s): want string, got nil"},
		{"enum", []any{"peek"}, 1, false, func(d *decoder) any { return d.enum(0, "m", "count", "peek") }, "peek", ""},
		{"enum other word", []any{"x"}, 1, false, func(d *decoder) any { return d.enum(0, "m", "count") }, "", `echo.lua: reply element 1 (m): want one of count, got string "x"`},
		{"ms", []any{int64(1500)}, 1, false, func(d *decoder) any { return d.ms(0, "d", nil) }, 1500 * time.Millisecond, ""},
		{"s overflow", []any{int64(math.MaxInt64 / 1000)}, 1, false, func(d *decoder) any { return d.seconds(0, "d", nil) }, time.Duration(0), "echo.lua: reply element 1 (d): want a number of seconds that fits a time.Duration, got int64 9223372036854775"},
		{"instant zero", []any{int64(0)}, 1, false, func(d *decoder) any { return d.unixUs(0, "t", nil) }, time.Time{}, ""},
		{"instant", []any{int64(1_700_000_000_123)}, 1, false, func(d *decoder) any { return d.unixMs(0, "t", nil) }, time.UnixMilli(1_700_000_000_123).UTC(), ""},
		{"rest", []any{"a", int64(1), int64(2)}, 1, true, func(d *decoder) any {
			return rest(d, 1, 1, "n", nil, func(i int) int64 { return d.int(i, "n", nil) })
		}, []int64{1, 2}, ""},
		{"records", []any{"a", int64(1), "x", int64(2), "y"}, 1, true, func(d *decoder) any {
			return rest(d, 1, 2, "r", between(1, 2), func(i int) testRecord { return testRecord{d.int(i, "n", nil), d.string(i+1, "s")} })
		}, []testRecord{{1, "x"}, {2, "y"}}, ""},
		{"half a record", []any{int64(1), "x", int64(2)}, 0, true, func(d *decoder) any {
			return rest(d, 0, 2, "r", nil, func(i int) int64 { return d.int(i, "n", nil) })
		}, nil, "echo.lua: reply element 1 (r): want whole records of 2 elements, got 3 elements"},
		{"too many records", []any{int64(1), int64(2), int64(3)}, 0, true, func(d *decoder) any {
			return rest(d, 0, 1, "r", atMost(2), func(i int) int64 { return d.int(i, "n", nil) })
		}, nil, "echo.lua: reply element 1 (r): want a count in [..2], got 3"},
		{"sentinel", []any{int64(-1), int64(-2)}, 2, false, func(d *decoder) any {
			return d.ms(0, "wait", atLeast(0).or(-1))
		}, -time.Millisecond, ""},
		{"not a sentinel", []any{int64(-2)}, 1, false, func(d *decoder) any {
			return d.ms(0, "wait", atLeast(0).or(-1))
		}, time.Duration(0), "echo.lua: reply element 1 (wait): want an int in [0..] or -1, got int64 -2"},
		{"pattern", []any{"ab"}, 1, false, func(d *decoder) any { return d.pattern(0, "id", leaseRE) }, "ab", ""},
		{"pattern mismatch", []any{"a b"}, 1, false, func(d *decoder) any { return d.pattern(0, "id", leaseRE) }, "", `echo.lua: reply element 1 (id): want a string matching ^(?:^[a-z]{1,4}$)$, got string "a b"`},
		{"first error wins", []any{"x", "y"}, 2, false, func(d *decoder) any {
			d.int(0, "a", nil)
			return d.int(1, "b", nil)
		}, int64(0), `echo.lua: reply element 1 (a): want int, got string "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecoder(echoInfo, tt.reply, tt.n, tt.rest)
			var got any
			if tt.f != nil {
				got = tt.f(&d)
			}
			if tt.f != nil && d.err == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
			var re *ReplyError
			switch {
			case tt.wantErr == "" && d.err != nil:
				t.Errorf("err = %v, want none", d.err)
			case tt.wantErr != "" && (!errors.As(d.err, &re) || d.err.Error() != tt.wantErr):
				t.Errorf("err = %v, want *ReplyError %q", d.err, tt.wantErr)
			}
		})
	}
}
