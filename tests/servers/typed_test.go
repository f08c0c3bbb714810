package servers

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/tests/scenario"
	"github.com/redlimit/redlimit/tests/tier"
)

// unusable is a client that fails the test if anything is sent through it.
type unusable struct {
	ratelimit.Client
	t *testing.T
}

func (u unusable) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	u.t.Fatalf("sent EVALSHA %v %v", keys, args)
	return nil
}

func (u unusable) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	u.t.Fatalf("sent EVAL %v %v", keys, args)
	return nil
}

// TestRatelimitRefusesBadArgs: every scenario step that a script answers
// with BADARG is refused by ratelimit before anything is sent, so no user
// of the typed API ever meets BADARG.
func TestRatelimitRefusesBadArgs(t *testing.T) {
	refused := 0
	for _, sc := range scenario.All() {
		for i, st := range sc.Steps {
			// Whether a caller clock is within 60 s of the server's TIME only
			// the server can tell: ratelimit sends it, and the script refuses.
			// Other spellings of a number ("-0", "01") have no Go value of
			// their own: the typed API cannot send them at all. A lease id is
			// a string the bindings send as it is; ratelimit makes its own
			// (its tests hold them to the script's rule).
			// A word tier.BindingsWord names (gcra's take at_most, refund and
			// charge, token_bucket's settling refills) and a batch of several
			// requests have no ratelimit call: their typed path is the
			// bindings', which check
			// each argument's bounds but leave a bound across arguments to
			// the script.
			argv := sc.Argv(st)
			bindingsOnly := scenario.SpecOf(sc.Script).Batch && len(argv) >= 7 && (tier.BindingsWord(argv[4]) || len(argv) > 7)
			if !strings.HasPrefix(st.Err, "BADARG") || strings.HasPrefix(st.Err, "BADARG now must be 0") || !tier.Canonical(argv) ||
				strings.HasPrefix(st.Err, "BADARG lease") || bindingsOnly {
				continue
			}
			_, err := tier.Typed(context.Background(), sc.Script, unusable{t: t}, sc.Keys, sc.Argv(st))
			if err != tier.ErrNotTyped {
				t.Errorf("%s/%s step %d %v: %v, want refused before sending", sc.Script, sc.Name, i, sc.Argv(st), err)
			}
			refused++
		}
	}
	if refused < 10 {
		t.Errorf("only %d BADARG steps: the check needs some", refused)
	}
}
