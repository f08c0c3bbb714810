package luatest

import (
	"fmt"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/gen"
	"github.com/redlimit/redlimit/tests/scenario"
)

// A script with "@multi itself" takes its multi-key form's layout itself
// when sent 2 or more keys: the same replies, errors and writes as the form
// luagen wraps around it (and so as each call on its own), at less cost.

// takesFormItself reports whether script's header says "@multi itself".
// The header is parsed once per script: the fuzz twins ask on every call.
func takesFormItself(t testing.TB, script string) bool {
	t.Helper()
	itselfMu.Lock()
	defer itselfMu.Unlock()
	if v, ok := itselfOf[script]; ok {
		return v
	}
	src, err := Source(script)
	if err != nil {
		t.Fatal(err)
	}
	s, diags := gen.ParseScript(script+".lua", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("%s: header: %v", script, diags)
	}
	itselfOf[script] = s.MultiItself
	return s.MultiItself
}

var (
	itselfMu sync.Mutex
	itselfOf = map[string]bool{}
)

var formCount = regexp.MustCompile(`^(0|[1-9][0-9]{0,3})$`)

// formCalls reads the multi-key form's layout as luagen's driver does: the
// calls, or the driver's error reply for a bad layout.
func formCalls(keys, argv []string) ([]mkCall, error) {
	var calls []mkCall
	k, a := 0, 0
	for a < len(argv) {
		if len(calls) == gen.MultiCalls || a+1 >= len(argv) || !formCount.MatchString(argv[a]) || !formCount.MatchString(argv[a+1]) {
			return nil, ErrorReply("BADARG multi-key call: ARGV must be, for each of 1 to 64 calls, its key count, its argument count and its arguments")
		}
		nk, _ := strconv.Atoi(argv[a])
		na, _ := strconv.Atoi(argv[a+1])
		if k+nk > len(keys) || a+2+na > len(argv) {
			return nil, ErrorReply(fmt.Sprintf("BADARG multi-key call: call %d names more keys or arguments than were sent", len(calls)+1))
		}
		calls = append(calls, mkCall{keys[k : k+nk], argv[a+2 : a+2+na]})
		k, a = k+nk, a+2+na
	}
	if len(calls) == 0 || k != len(keys) {
		return nil, ErrorReply(fmt.Sprintf("BADARG multi-key call: %d keys sent and %d named, in %d calls (1 to 64)", len(keys), k, len(calls)))
	}
	return calls, nil
}

// TestItselfIsTheForm sends random batches (TestMultiKeyFormIsItsCalls's
// calls: keys repeated, bad arguments, a key of the wrong type, another
// script's state) of 2 to 64 keys to each script that takes its form
// itself, and the same batches to luagen's form on a twin server at the
// same frozen clock: the same reply, element by element, and the same keys,
// values and TTLs after every batch. Then every bad layout of
// TestMultiKeyLayoutIsChecked's kind, sent with 2 keys: the form's error,
// and nothing sent.
func TestItselfIsTheForm(t *testing.T) {
	forms, most := multiKeyForms(t)
	some := 0
	for _, script := range scenario.Scripts() {
		if !takesFormItself(t, script) {
			continue
		}
		some++
		t.Run(script, func(t *testing.T) {
			src, err := Source(script)
			if err != nil {
				t.Fatal(err)
			}
			var batches, calls, errs int
			for seed := int64(1); seed <= 24; seed++ {
				rng := rand.New(rand.NewSource(seed))
				g := &mkGen{rng: rng, script: script}
				a, b := New(scenario.T0), New(scenario.T0)
				for _, r := range []*Redis{a, b} {
					r.data[mkWrong] = fuzzValue("hash\tname\talice")
					r.data[mkForeign] = fuzzValue(mkForeignState(script))
				}
				for i := 0; i < 10; i++ {
					now := a.Now() + rng.Int63n(400_000)
					a.SetTime(now)
					b.SetTime(now)
					batch := make([]mkCall, 2+rng.Intn(most-1))
					nkeys := 0
					for j := range batch {
						batch[j] = g.call(now)
						nkeys += len(batch[j].keys)
					}
					if nkeys < 2 {
						continue // one key is a call of its own
					}
					keys, argv := multiKeyLayout(batch)
					want, wantErr := a.Eval(forms[script], keys, argv)
					got, err := b.Eval(src, keys, argv)
					if !sameReply(err, wantErr) {
						t.Fatalf("seed %d batch %d: itself answered %v, the form %v\ncalls: %v", seed, i, err, wantErr, batch)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("seed %d batch %d: (-the form +itself):\n%s\ncalls: %v", seed, i, diff, batch)
					}
					if sa, sb := a.Snapshot(), b.Snapshot(); !sa.Equal(sb) {
						t.Fatalf("seed %d batch %d: keys (-the form +itself):\n%s", seed, i, cmp.Diff(sa.String(), sb.String()))
					}
					for _, el := range got.([]any) {
						if _, ok := el.(ErrorReply); ok {
							errs++
						}
					}
					batches++
					calls += len(batch)
				}
			}
			t.Logf("%d calls in %d batches, %d error elements", calls, batches, errs)
			if batches < 200 || errs < 50 {
				t.Errorf("the search proves little: %d batches, %d error elements", batches, errs)
			}

			// Bad layouts with 2 keys: the form's error, nothing sent.
			r, keys, good := firstWrite(t, script, src, 0)
			one := mkCall{keys, good}
			k2, a2 := multiKeyLayout([]mkCall{one, one})
			n1 := 2 + len(good)
			bad := map[string][]string{
				"a count not digits":             append([]string{"x"}, a2[1:]...),
				"second call's count not digits": append(append(append([]string(nil), a2[:n1]...), "01"), a2[n1+1:]...),
				"more keys named than sent":      append([]string{"2"}, a2[1:]...),
				"more arguments named than sent": append(append(append([]string(nil), a2[:n1+1]...), strconv.Itoa(len(good)+1)), a2[n1+2:]...),
				"a stray argument":               append(append([]string(nil), a2...), "x"),
				"a trailing count":               append(append([]string(nil), a2...), "0"),
				"no arguments":                   nil,
			}
			k65, a65 := multiKeyLayout(repeatCall(one, most+1))
			for name, argv := range bad {
				checkBadLayout(t, r, src, forms[script], name, k2, argv)
			}
			checkBadLayout(t, r, src, forms[script], "65 calls", k65, a65)
			checkBadLayout(t, r, src, forms[script], "a third key not named", append(append([]string(nil), k2...), "c:{mk}"), a2)
		})
	}
	if some == 0 {
		t.Fatal("no script says @multi itself")
	}
}

// checkBadLayout sends a bad layout to the script itself and to the form:
// the same BADARG multi-key call, nothing sent, nothing changed.
func checkBadLayout(t *testing.T, r *Redis, src, form, name string, keys, argv []string) {
	t.Helper()
	before := r.Snapshot()
	_, wantErr := r.Clone().Eval(form, keys, argv)
	got, err := r.Eval(src, keys, argv)
	if err == nil || wantErr == nil || err.Error() != wantErr.Error() || !strings.HasPrefix(err.Error(), "BADARG multi-key call: ") {
		t.Errorf("%s: itself answered (%v, %v), the form %v", name, got, err, wantErr)
	}
	if len(r.Commands()) != 0 {
		t.Errorf("%s: sent %v before failing", name, r.Commands())
	}
	if after := r.Snapshot(); !before.Equal(after) {
		t.Errorf("%s changed state", name)
	}
}
