package gen

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestMultiKeyFormOfEveryBundledScript: for every script in lua/, the
// manifest's multi sha1 is sha1(before + the script's text + after), the
// manifest's multi_form is this generator's, and bindings.MultiKeyForm of
// the script's hash is that very text. On a real server, SCRIPT LOAD of the
// form compiles it and answers the same sha1.
func TestMultiKeyFormOfEveryBundledScript(t *testing.T) {
	b, err := os.ReadFile("../bindings/scripts.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifestFile
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := &manifestMultiForm{Before: multiBefore, After: multiAfter, MaxCalls: MultiCalls}
	if diff := cmp.Diff(want, m.MultiForm); diff != "" {
		t.Errorf("the manifest's multi_form (-generator +manifest):\n%s", diff)
	}
	// The driver's own bound is the constant the manifest states.
	if !strings.Contains(multiAfter, "#calls == 64 or") || MultiCalls != 64 {
		t.Errorf("the driver's bound on calls is not MultiCalls (%d)", MultiCalls)
	}
	var c *redis.Client
	if addr := redisserver.Maybe(t); addr != "" {
		c = redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
	}
	paths, err := filepath.Glob("../lua/*.lua")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in lua/ (%v)", err)
	}
	inManifest := map[string]*manifestMulti{}
	for _, s := range m.Scripts {
		inManifest[s.Name] = s.Multi
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".lua")
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		form := multiBefore + string(src) + multiAfter
		mm := inManifest[name]
		if mm == nil {
			t.Errorf("%s: the manifest has no multi for it", name)
			continue
		}
		if mm.SHA1 != sha1Hex(form) {
			t.Errorf("%s: manifest multi sha1 %s, sha1(before+source+after) %s", name, mm.SHA1, sha1Hex(form))
		}
		s := bindings.MultiKeyForm(sha1Hex(string(src)))
		if s == nil {
			t.Errorf("%s: bindings.MultiKeyForm(%s) is nil", name, sha1Hex(string(src)))
			continue
		}
		if s.Hash() != mm.SHA1 {
			t.Errorf("%s: bindings.MultiKeyForm(...).Hash() = %s, the manifest says %s", name, s.Hash(), mm.SHA1)
		}
		if c != nil {
			got, err := c.ScriptLoad(context.Background(), form).Result()
			if err != nil || got != mm.SHA1 {
				t.Errorf("%s: SCRIPT LOAD of the form: (%v, %v), want %s", name, got, err, mm.SHA1)
			}
		}
	}
	if bindings.MultiKeyForm(sha1Hex("return 1")) != nil {
		t.Error("MultiKeyForm of a hash no script has is not nil")
	}
}

// TestMultiTag: what @multi refuses, with file:line, and what it gives: a
// manifest entry whose sha1 is the form's, and none without the tag.
func TestMultiTag(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{
			name: "declared twice",
			src:  lua("--- s", "--- @return r int", "--- @multi", "--- @multi again", "return 1"),
			want: []string{"x.lua:4: @multi: already declared"},
		},
		{
			name: "with a #! line",
			src:  lua("#!lua", "--- s", "--- @return r int", "--- @multi", "return 1"),
			want: []string{"x.lua:1: #! line: miniredis, gopher-lua and Redis before 7.0 cannot parse it (and without flags=no-writes Redis 7 treats the script as one that writes; if it only reads, declare @flags no-writes); drop it, or keep it with -- luagen:ignore shebang if you run only on Redis 7 or later (shebang)",
				"x.lua:4: @multi: a script with a #! line has no multi-key form (its flags would have to lead the form's text); drop one or the other"},
		},
		{
			name: "... at chunk level",
			src:  lua("--- s", "--- @return r int", "--- @multi", "local a = ...", "return 1"),
			want: []string{"x.lua:4: @multi: ... at the script's chunk level: in the multi-key form the chunk is the body of a function, which is no vararg function, so Redis cannot compile it; read ARGV instead (under EVAL ... is empty anyway)"},
		},
		{
			name: "redis.setresp carries over",
			src:  lua("--- s", "--- @return r int", "--- @multi", "redis.setresp(3)", "return 1"),
			want: []string{"x.lua:4: @multi: redis.setresp would carry over to the calls after this one in a multi-key call; drop @multi or the call"},
		},
		{
			name: "itself, where the script's own layout takes 2 keys",
			src:  lua("--- s", "--- @key a", "--- @key ...more[0..1]", "--- @return r int", "--- @multi itself", "return KEYS[1] .. KEYS[2]"),
			want: []string{"x.lua:5: @multi itself: the script's own layout takes 2 or more keys, and 2 or more keys are the multi-key form's layout; drop itself"},
		},
		{
			name: "itself, on one key",
			src:  lua("--- s", "--- @key ...one[1..1]", "--- @return r int", "--- @multi itself", "return #KEYS"),
		},
		{
			name: "redis.replicate_commands is there under EVAL",
			src:  lua("--- s", "--- @return r int", "--- @multi", "redis.replicate_commands()", "return 1"),
		},
		{
			name: "... at chunk level without @multi",
			src:  lua("--- s", "--- @return r int", "local a = ...", "return 1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ParseScript("x.lua", []byte(tt.src))
			if diff := cmp.Diff(tt.want, diagStrings(diags)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
	for _, tag := range []string{"--- @multi\n", "--- @multi  itself: this file takes the layout\n", "--- @multi  its form; itself is a word it uses\n", ""} {
		multi, itself := tag != "", strings.HasPrefix(tag, "--- @multi  itself")
		src := "--- Answers one.\n--- @return r int\n" + tag + "return 1\n"
		out, err := Generate([]Input{{Path: "one.lua", Src: []byte(src)}}, Options{Package: "x", Manifest: true})
		if err != nil {
			t.Fatal(err)
		}
		var m manifestFile
		if err := json.Unmarshal(out.Manifest, &m); err != nil {
			t.Fatal(err)
		}
		got := m.Scripts[0].Multi
		switch {
		case multi && (got == nil || got.SHA1 != sha1Hex(multiBefore+src+multiAfter) || m.MultiForm == nil):
			t.Errorf("@multi: manifest multi %+v, multi_form %v; want sha1 %s", got, m.MultiForm != nil, sha1Hex(multiBefore+src+multiAfter))
		case !multi && (got != nil || m.MultiForm != nil):
			t.Errorf("without @multi: manifest multi %+v, multi_form %v; want neither", got, m.MultiForm != nil)
		case multi && got.Itself != itself:
			t.Errorf("%q: manifest itself %v, want %v", tag, got.Itself, itself)
		}
		// The Go names MultiKeyItself, for the script itself only.
		var shared []byte
		for _, f := range out.Files {
			if f.Name == SharedFile {
				shared = f.Content
			}
		}
		if entry := "OneScript.Hash(): OneScript,"; multi && bytes.Contains(shared, []byte(entry)) != itself {
			t.Errorf("%q: MultiKeyItself's map holds %q: %v, want %v", tag, entry, !itself, itself)
		}
	}
}
