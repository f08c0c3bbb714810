package bindings

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The committed library is what Go loads, and the manifest names it and
// one function per script, as other stacks read them. (The library runs on
// real servers in tests/servers/functions_test.go.)
func TestFunctionsLibraryFile(t *testing.T) {
	file, err := os.ReadFile(FunctionsLibrary + ".functions.lua")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != FunctionsCode() {
		t.Error("FunctionsCode() differs from redlimit.functions.lua; run go generate ./bindings")
	}
	raw, err := os.ReadFile("scripts.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Functions struct{ Library, File string }
		Scripts   []struct {
			Name     string
			Function struct{ Name, Command string }
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Functions.Library != "redlimit" || m.Functions.File != "redlimit.functions.lua" {
		t.Errorf("manifest's library: %+v", m.Functions)
	}
	for _, s := range m.Scripts {
		fn := "redlimit_" + s.Name
		if s.Function.Name != fn || s.Function.Command != "FCALL" {
			t.Errorf("%s: function %+v, want %s with FCALL", s.Name, s.Function, fn)
		}
		if !strings.Contains(FunctionsCode(), "function_name = '"+fn+"'") {
			t.Errorf("the library registers no %s", fn)
		}
	}
	if len(m.Scripts) != len(allScripts) || len(functionOf) != len(allScripts) {
		t.Errorf("%d scripts in the manifest, %d functions, %d scripts", len(m.Scripts), len(functionOf), len(allScripts))
	}
}

// miniredis has no Functions: a call through the library fails plainly,
// never falling back to EVALSHA behind the caller's back.
func TestFunctionsOnMiniredis(t *testing.T) {
	_, c := newServer(t)
	_, err := LeakyBucket(context.Background(), WithFunctions(c), "lb:fn", bucketParams(1, time.Time{}))
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		t.Errorf("err = %v, want the server's unknown command", err)
	}
	b := NewBatch()
	p := b.GCRA([]string{"gcra:fn"}, GCRAParams{Burst: 1, Rate: 1, Period: time.Second, Take: GCRATakeAll, Requests: []GCRARequest{{Cost: 1}}})
	if err := b.Exec(context.Background(), WithFunctions(c)); err == nil {
		t.Error("Exec through the library on miniredis: no error")
	}
	if _, err := p.Result(); err == nil {
		t.Error("batch result through the library on miniredis: no error")
	}
}
