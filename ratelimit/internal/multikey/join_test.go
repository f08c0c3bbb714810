package multikey

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redlimit/redlimit/bindings"
)

// join against its definition, on random batches of GCRA calls of one or
// two limits, keys of few names or many, and now and then a call that
// cannot join (a second request): calls of one limit on distinct keys
// join in the order they came, a key's second call under a limit and a
// group of one go with the rest. The common batch (every call joins one
// group) is returned as it is, with one allocation.
func TestJoin(t *testing.T) {
	seed := maphash.MakeSeed()
	rnd := rand.New(rand.NewPCG(3, 4))
	hash := bindings.GCRAScript.Hash()
	limits := [][]any{
		{int64(10), int64(10), int64(1000), int64(0), "all"},
		{int64(20), int64(20), int64(1000), int64(0), "all"},
	}
	for range 3000 {
		n := 2 + rnd.IntN(maxCalls-1)
		names, nlimits := n, 1
		if rnd.IntN(2) == 0 {
			names = 1 + rnd.IntN(2*n)
		}
		if rnd.IntN(3) == 0 {
			nlimits = 2
		}
		batch := make([]*waiter, n)
		for i := range batch {
			args := append(slices.Clone(limits[rnd.IntN(nlimits)]), int64(1), int64(0))
			if rnd.IntN(40) == 0 {
				args = append(args, int64(1), int64(0)) // two requests: not joined
			}
			key := fmt.Sprint("k", i)
			if names < n {
				key = fmt.Sprint("k", rnd.IntN(names))
			}
			batch[i] = &waiter{keys: []any{key}, args: args}
		}
		in := slices.Clone(batch)
		joined, rest := join(seed, hash, batch)
		wantJoined, wantRest := joinedByDefinition(in)
		if !slices.EqualFunc(joined, wantJoined, slices.Equal) || !sameCalls(rest, wantRest) {
			t.Fatalf("join(%v) = %v, %v; want %v, %v", keysOf(in), groupKeys(joined), keysOf(rest), groupKeys(wantJoined), keysOf(wantRest))
		}
		if !slices.Equal(batch, in) {
			t.Fatalf("join reordered its batch: %v, was %v", keysOf(batch), keysOf(in))
		}
		if len(wantRest) == 0 && len(wantJoined) == 1 {
			if &joined[0][0] != &batch[0] {
				t.Fatalf("a batch that joins whole was copied")
			}
			if allocs := testing.AllocsPerRun(1, func() { join(seed, hash, batch) }); allocs > 1 {
				t.Fatalf("%d allocations for a batch that joins whole", int(allocs))
			}
		}
	}
}

// joinedByDefinition is what join should make of batch: each call that
// can join goes to the group of its limit, in order, unless that group
// has its key or is full; what cannot, and groups of one, go to the rest.
func joinedByDefinition(batch []*waiter) (joined [][]*waiter, rest []*waiter) {
	sh := shapes[bindings.GCRAScript.Hash()]
	for _, w := range batch {
		if len(w.keys) != 1 || len(w.args) != sh.fixed+sh.request {
			rest = append(rest, w)
			continue
		}
		g := slices.IndexFunc(joined, func(j []*waiter) bool { return slices.Equal(j[0].args[:sh.fixed], w.args[:sh.fixed]) })
		switch {
		case g < 0:
			joined = append(joined, []*waiter{w})
		case len(joined[g]) == maxCalls || slices.ContainsFunc(joined[g], func(o *waiter) bool { return o.keys[0] == w.keys[0] }):
			rest = append(rest, w)
		default:
			joined[g] = append(joined[g], w)
		}
	}
	return slices.DeleteFunc(joined, func(j []*waiter) bool {
		if len(j) == 1 {
			rest = append(rest, j[0])
		}
		return len(j) == 1
	}), rest
}

// sameCalls reports whether a and b hold the same calls, in any order.
func sameCalls(a, b []*waiter) bool {
	n := map[*waiter]int{}
	for _, w := range a {
		n[w]++
	}
	for _, w := range b {
		n[w]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return true
}

func groupKeys(joined [][]*waiter) (out [][]any) {
	for _, j := range joined {
		out = append(out, keysOf(j))
	}
	return out
}
