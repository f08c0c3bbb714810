package multikey

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// runs against its definition, on random batches of few keys (many runs)
// and many (few): each key's calls together, in the order they came, the
// keys in the order of their first calls; a batch of distinct keys, or
// one whose calls are not of one key each, as it came; nothing allocated.
func TestRuns(t *testing.T) {
	seed := maphash.MakeSeed()
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rnd.IntN(maxCalls)
		names := 1 + rnd.IntN(2*n)
		batch := make([]*waiter, n)
		for i := range batch {
			batch[i] = &waiter{keys: []any{fmt.Sprint("k", rnd.IntN(names))}, args: []any{i}}
		}
		if rnd.IntN(10) == 0 {
			batch[rnd.IntN(n)].keys = []any{"x", "y"} // not of one key each
		}
		in := slices.Clone(batch)
		if allocs := testing.AllocsPerRun(1, func() { copy(batch, in); runs(seed, batch) }); allocs != 0 {
			t.Fatalf("%d allocations", int(allocs))
		}
		if want := grouped(in); !slices.Equal(batch, want) {
			t.Fatalf("runs(%v) = %v, want %v", keysOf(in), keysOf(batch), keysOf(want))
		}
	}
}

// grouped is what runs should make of batch, by its definition.
func grouped(batch []*waiter) []*waiter {
	var order []any
	byKey := map[any][]*waiter{}
	for _, w := range batch {
		if len(w.keys) != 1 {
			return batch
		}
		k := w.keys[0]
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], w)
	}
	var out []*waiter
	for _, k := range order {
		out = append(out, byKey[k]...)
	}
	return out
}

func keysOf(batch []*waiter) (keys []any) {
	for _, w := range batch {
		keys = append(keys, w.keys...)
	}
	return keys
}

// What runs costs a batch of 64 calls on distinct keys (the common batch,
// which it leaves as it came), per call.
func BenchmarkRunsDistinct(b *testing.B) {
	seed := maphash.MakeSeed()
	batch := make([]*waiter, maxCalls)
	for i := range batch {
		batch[i] = &waiter{keys: []any{fmt.Sprintf("rl:user:%08d", i)}}
	}
	b.ReportAllocs()
	start := time.Now()
	for range b.N {
		runs(seed, batch)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/maxCalls, "ns/call")
}
