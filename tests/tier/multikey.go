package tier

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// sendMultiKey sends step i's call through the script's multi-key form,
// alone or among calls on other keys of its slot (Tier.MultiKey), and
// returns its element: the reply, or the error reply as an error. Each
// element that is an error must be a redis.Error (go-redis reads an error
// inside an array as one) that starts with the code the gopher-lua tier
// answers, want; the other calls' elements must be what the gopher-lua
// tier answers them.
func (s *stepper) sendMultiKey(i int, argv []string, want error) (any, error) {
	t := s.t
	t.Helper()
	form := bindings.MultiKeyForm(s.script.Hash())
	if form == nil {
		t.Fatalf("%s has no multi-key form", s.sc.Script)
	}
	if itself := bindings.MultiKeyItself(s.script.Hash()); itself != nil && s.tr.MultiKey == MultiKeyAmong {
		form = itself
		s.paths.itself++
	}
	type call struct{ keys, refKeys []string }
	calls := []call{{s.keys, s.sc.Keys}}
	at := 0
	if s.tr.MultiKey == MultiKeyAmong {
		calls = []call{s.neighbour("before"), calls[0], s.neighbour("after")}
		at = 1
	}
	var keys []string
	var args []any
	for _, c := range calls {
		keys = append(keys, c.keys...)
		args = append(args, strconv.Itoa(len(c.keys)), strconv.Itoa(len(argv)))
		for _, a := range argv {
			args = append(args, a)
		}
	}
	reply, err := form.Run(context.Background(), s.c, keys, args...).Result()
	if err != nil {
		t.Fatalf("step %d %v: %s: the multi-key form failed as a whole: %v", i, argv, s.tr.Name, err)
	}
	els, ok := reply.([]any)
	if !ok || len(els) != len(calls) {
		t.Fatalf("step %d %v: %s: the multi-key form answered %#v, want %d elements", i, argv, s.tr.Name, reply, len(calls))
	}
	s.paths.multi++
	for j, c := range calls {
		w := want
		var wReply any
		if j != at {
			// The neighbours: the same ARGV on keys of their own, asked
			// of the gopher-lua tier as calls of their own, in order.
			wReply, w = s.ref.Eval(s.src, c.refKeys, argv)
		}
		el := els[j]
		e, isErr := el.(error)
		if w != nil {
			var re redis.Error
			code := strings.Fields(w.Error())[0]
			if !isErr || !errors.As(e, &re) || !strings.HasPrefix(e.Error(), code+" ") || !SameError(w, e) {
				t.Fatalf("step %d %v: %s: element %d of the multi-key form is %#v, want the error reply %q", i, argv, s.tr.Name, j, el, w)
			}
			if j == at {
				s.paths.codes[code]++
			}
			continue
		}
		if isErr {
			t.Fatalf("step %d %v: %s: element %d of the multi-key form is the error %v, gopher-lua answers %v", i, argv, s.tr.Name, j, e, wReply)
		}
		if j != at {
			if diff := cmp.Diff(wReply, Normalize(el)); diff != "" {
				t.Fatalf("step %d %v: %s: element %d (a neighbour): gopher-lua (-) vs the multi-key form (+):\n%s", i, argv, s.tr.Name, j, diff)
			}
		}
	}
	if e, ok := els[at].(error); ok {
		return nil, e
	}
	return els[at], nil
}

// neighbour is a call's keys beside the step's: each of the step's keys
// with a suffix and the table's number, in its slot (its {hash tag}, or the whole key as one),
// on the server and, without the run's prefix, on the gopher-lua tier.
func (s *stepper) neighbour(suffix string) (c struct{ keys, refKeys []string }) {
	for j, k := range s.keys {
		c.keys = append(c.keys, sameSlot(k, suffix+strconv.Itoa(s.table)))
		c.refKeys = append(c.refKeys, sameSlot(s.sc.Keys[j], suffix))
	}
	return c
}

// sameSlot is another key in key's Cluster slot: key with a suffix when
// it has a hash tag (the first {…} with something inside), else key
// inside braces.
func sameSlot(key, suffix string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":" + suffix
		}
	}
	return "{" + key + "}:" + suffix
}
