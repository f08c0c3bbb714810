package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/internal/redisserver"
)

// corpusWarnings are what luagen says about the corpus: advice, never a
// refusal. The scripts work as written on Redis and miniredis alike.
var corpusWarnings = []string{
	"average.lua:11 number-string",
	"bounded_queue.lua:12 number-arg",
	"sliding_log.lua:15 number-arg",
	"sum.lua:9 error-code",
}

// The corpus (testdata/corpus: quotas with fractions, a leaderboard, locks,
// queues, counters with floats, the two scripts issue 18 found refused) is
// what strangers bring: it must generate with warnings only, and the code
// must compile, pass go vet and run (testdata/corpus_test.go.txt) on
// miniredis and a real redis-server. -strict refuses exactly the scripts
// with warnings.
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.lua")
	if err != nil || len(files) < 12 {
		t.Fatalf("corpus: %d scripts, %v", len(files), err)
	}
	var ins []Input
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: filepath.Base(f), Src: src})
	}
	out, err := Generate(ins, Options{Package: "corpus", Manifest: true})
	if err != nil {
		t.Fatalf("the corpus is refused:\n%v", err)
	}
	var got []string
	for _, w := range out.Warnings {
		check := strings.TrimSuffix(w.Msg[strings.LastIndex(w.Msg, " (")+2:], ")")
		got = append(got, fmt.Sprintf("%s:%d %s", w.File, w.Line, check))
	}
	if diff := cmp.Diff(corpusWarnings, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	checkManifest(t, "corpus manifest", out.Manifest)

	warned := map[string]bool{}
	for _, w := range out.Warnings {
		warned[w.File] = true
	}
	for _, in := range ins {
		_, err := Generate([]Input{in}, Options{Package: "corpus", Strict: true})
		if refused := err != nil; refused != warned[in.Path] {
			t.Errorf("%s: -strict refused = %v, has warnings = %v (%v)", in.Path, refused, warned[in.Path], err)
		}
	}

	if testing.Short() {
		return
	}
	mod := map[string][]byte{}
	for _, f := range out.Files {
		mod[f.Name] = f.Content
	}
	test, err := os.ReadFile("testdata/corpus_test.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	mod["corpus_test.go"] = test
	dir := goModule(t, "example.com/corpus", mod)
	var env []string
	if addr := redisserver.Maybe(t); addr != "" {
		env = []string{"CORPUS_REDIS_ADDR=" + addr, "CORPUS_REQUIRE_REDIS=1"}
	}
	goCmd(t, dir, env, "vet", "./...")
	goCmd(t, dir, env, "test", "-count=1", "./...")
}
