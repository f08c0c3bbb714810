package multikey

import "hash/maphash"

// runs puts the calls of a batch that name one key next to each other, at
// the place of the key's first call, each key's in the order they came,
// when every call has one key (the scripts that take the form's layout
// themselves). Those scripts but the sliding log read a key once and write
// it once for calls on it in a row (a run), so a hot key's calls among calm
// keys' cost Redis a read and a write, not one each (make bench-cost,
// shapes mixed and grouped: 23–25 % less per decision when every other call
// is the hot key's, 2026-12-05). Only calls on one key see each other's writes, and
// those keep their order, so no answer changes; the batch runs at one
// instant whatever its order. A batch whose keys are all distinct, the
// common one, is left as it came after one hash a call and nothing
// allocated.
func runs(seed maphash.Seed, batch []*waiter) {
	if len(batch) < 3 || len(batch) > maxCalls {
		return // two calls are a run or two keys already
	}
	// head, per call, the index of its key's first call.
	var keys keyIndex
	var head [maxCalls]int8
	again := false
	for i, w := range batch {
		if len(w.keys) != 1 {
			return
		}
		k, ok := w.keys[0].(string)
		if !ok {
			return
		}
		f := keys.first(seed, batch, i, k)
		head[i], again = int8(f), again || f != i
	}
	if !again {
		return
	}
	// An insertion sort by head: stable, and a batch is at most 64 calls.
	for i := 1; i < len(batch); i++ {
		w, hw := batch[i], head[i]
		j := i
		for ; j > 0 && head[j-1] > hw; j-- {
			batch[j], head[j] = batch[j-1], head[j-1]
		}
		batch[j], head[j] = w, hw
	}
}

// keyIndex is an open-addressed table of the first call on each key of a
// batch of at most maxCalls calls of one key each (its index + 1): a hash
// a call, where comparing every pair of keys is up to 2016 comparisons.
type keyIndex [2 * maxCalls]int8

// first records the key k of batch[i] and returns the index of the first
// call on it: i for a key no call before it named.
func (t *keyIndex) first(seed maphash.Seed, batch []*waiter, i int, k string) int {
	h := maphash.String(seed, k) % uint64(len(t))
	for {
		f := t[h]
		if f == 0 {
			t[h] = int8(i + 1)
			return i
		}
		if batch[f-1].keys[0] == batch[i].keys[0] {
			return int(f - 1)
		}
		h = (h + 1) % uint64(len(t))
	}
}
