package ratelimit_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/ratelimit"
)

func TestNewRefusesLimits(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		alg   ratelimit.Algorithm
		limit ratelimit.Limit
		field string
	}{
		{ratelimit.GCRA, ratelimit.Limit{}, "Rate"},
		{ratelimit.GCRA, ratelimit.Limit{Rate: 10, Period: time.Second}, "Burst"},
		{ratelimit.GCRA, ratelimit.Limit{Rate: 10, Burst: 10}, "Period"},
		{ratelimit.GCRA, ratelimit.PerSecond(0), "Rate"},
		{ratelimit.GCRA, ratelimit.PerSecond(-5), "Rate"},
		{ratelimit.GCRA, ratelimit.PerSecond(1e9 + 1), "Rate"},
		{ratelimit.GCRA, ratelimit.PerSecond(10).WithBurst(1e9 + 1), "Burst"},
		{ratelimit.GCRA, ratelimit.Per(1, 1500*time.Microsecond), "Period"},
		{ratelimit.GCRA, ratelimit.Per(1, 999*time.Microsecond), "Period"},
		{ratelimit.GCRA, ratelimit.Per(1, 1e11*ms+ms), "Period"},
		{ratelimit.GCRA, ratelimit.Per(1, -time.Second), "Period"},
		{ratelimit.GCRA, ratelimit.Limit{Rate: 1001, Period: ms, Burst: 1}, "Rate"},
		{ratelimit.LeakyBucket, ratelimit.Limit{Rate: 1001, Period: ms, Burst: 1}, "Rate"},
		{ratelimit.GCRA, ratelimit.Limit{Rate: 1, Period: 1e11 * ms, Burst: 11}, ""},
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 1, Period: 1e11 * ms, Burst: 11}, ""},
		{ratelimit.TokenBucketInterval, ratelimit.Limit{Rate: 1, Period: 1e11 * ms, Burst: 11}, ""},
		{ratelimit.FixedWindow, ratelimit.PerMinute(10).WithBurst(5), "Burst"},
		{ratelimit.SlidingWindowCounter, ratelimit.PerMinute(10).WithBurst(20), "Burst"},
		{ratelimit.SlidingWindowLog, ratelimit.PerMinute(10001), "Rate"},
	}
	for _, tt := range tests {
		_, err := ratelimit.New(newFrozen(t).rdb, "test", tt.limit, ratelimit.WithAlgorithm(tt.alg))
		if !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%v %v: err = %v, want ErrInvalid", tt.alg, tt.limit, err)
			continue
		}
		// The message names the algorithm, the limit and the field.
		want := fmt.Sprintf("ratelimit: invalid: %v limit {%d per %v, burst %d}: %s", tt.alg, tt.limit.Rate, tt.limit.Period, tt.limit.Burst, tt.field)
		if tt.field == "" {
			want += "Burst × Period / Rate must be at most 1e15"
			if tt.alg == ratelimit.TokenBucketInterval {
				want = want[:strings.LastIndex(want, ":")+2] + "⌈Burst / Rate⌉ × Period must be at most 1e15"
			}
		}
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v %v: %q, want it to start %q", tt.alg, tt.limit, err, want)
		}
	}
}

func TestNewAcceptsEdges(t *testing.T) {
	ms := time.Millisecond
	for _, alg := range ratelimit.Algorithms() {
		for _, l := range []ratelimit.Limit{
			ratelimit.PerSecond(1), ratelimit.Per(10000, 24*time.Hour), ratelimit.Per(1, ms),
			{Rate: 1000, Period: ms, Burst: 1000},
			{Rate: 10000, Period: 1e11 * ms, Burst: 10000},
		} {
			if _, err := ratelimit.New(newFrozen(t).rdb, "test", l, ratelimit.WithAlgorithm(alg)); err != nil {
				t.Errorf("%v %v: %v", alg, l, err)
			}
		}
	}
	// The rate algorithms take any burst.
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval, ratelimit.LeakyBucket} {
		for _, l := range []ratelimit.Limit{
			ratelimit.PerSecond(1).WithBurst(1e9),
			ratelimit.PerSecond(1e6).WithBurst(1),
			{Rate: 1, Period: 1e11 * ms, Burst: 10},
		} {
			if _, err := ratelimit.New(newFrozen(t).rdb, "test", l, ratelimit.WithAlgorithm(alg)); err != nil {
				t.Errorf("%v %v: %v", alg, l, err)
			}
		}
	}
}

func TestNewRefusesOptions(t *testing.T) {
	rdb := newFrozen(t).rdb
	for name, opts := range map[string][]ratelimit.Option{
		"algorithm":     {ratelimit.WithAlgorithm(ratelimit.Algorithm(99))},
		"negative alg":  {ratelimit.WithAlgorithm(-1)},
		"prefix with {": {ratelimit.WithPrefix("app:{x}:")},
		"prefix with }": {ratelimit.WithPrefix("app}")},
		"empty prefix":  {ratelimit.WithPrefix("")},
		"timeout":       {ratelimit.WithTimeout(-time.Second)},
		"share 0":       {ratelimit.WithFallback(ratelimit.FailLocal(0))},
		"share above 1": {ratelimit.WithFallback(ratelimit.FailLocal(1.5))},
		"share NaN":     {ratelimit.WithFallback(ratelimit.FailLocal(math.NaN()))},
		"lockout 0":     {ratelimit.WithLockout(0)},
		"lockout 1.5ms": {ratelimit.WithLockout(1500 * time.Microsecond)},
		"deny cache":    {ratelimit.WithDenyCache(-1)},
	} {
		if _, err := ratelimit.New(rdb, "test", ratelimit.PerSecond(1), opts...); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := ratelimit.New(nil, "test", ratelimit.PerSecond(1)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("nil client: err = %v", err)
	}
	// A pipeline answers only at Exec: a decision through it would be empty.
	if _, err := ratelimit.New(rdb.Pipeline(), "test", ratelimit.PerSecond(1)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("pipeline: err = %v", err)
	}
	if _, err := ratelimit.New(rdb.TxPipeline(), "test", ratelimit.PerSecond(1)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("tx pipeline: err = %v", err)
	}
}

func TestAlgorithmNames(t *testing.T) {
	want := []string{"gcra", "token_bucket", "token_bucket_interval", "leaky_bucket", "fixed_window", "sliding_window_log", "sliding_window_counter"}
	var got []string
	for _, a := range ratelimit.Algorithms() {
		got = append(got, a.String())
	}
	if !cmp.Equal(got, want) {
		t.Errorf("Algorithms() = %v, want %v", got, want)
	}
	if s := ratelimit.Algorithm(99).String(); s != "Algorithm(99)" {
		t.Errorf("Algorithm(99) = %q", s)
	}
	var zero ratelimit.Algorithm
	if zero != ratelimit.GCRA {
		t.Error("the zero Algorithm is not GCRA")
	}
}

func TestLimitConstructors(t *testing.T) {
	for _, tt := range []struct {
		got, want ratelimit.Limit
	}{
		{ratelimit.PerSecond(5), ratelimit.Limit{Rate: 5, Period: time.Second, Burst: 5}},
		{ratelimit.PerMinute(5), ratelimit.Limit{Rate: 5, Period: time.Minute, Burst: 5}},
		{ratelimit.Per(5, time.Hour), ratelimit.Limit{Rate: 5, Period: time.Hour, Burst: 5}},
		{ratelimit.Per(5, 24*time.Hour), ratelimit.Limit{Rate: 5, Period: 24 * time.Hour, Burst: 5}},
		{ratelimit.Per(1, 250*time.Millisecond), ratelimit.Limit{Rate: 1, Period: 250 * time.Millisecond, Burst: 1}},
		{ratelimit.PerSecond(5).WithBurst(50), ratelimit.Limit{Rate: 5, Period: time.Second, Burst: 50}},
	} {
		if tt.got != tt.want {
			t.Errorf("got %v, want %v", tt.got, tt.want)
		}
	}
}
