package gen

import (
	"os"
	"strings"
	"testing"
)

// The table in lint.go is the one list of checks: the package doc must
// print it as ChecksText does, and luagen -help prints ChecksText itself
// (cmd/luagen tests that).
func TestDocListsEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := ChecksText("//\t"); !strings.Contains(string(doc), want) {
		t.Errorf("doc.go's list of checks differs from the table in lint.go; paste:\n%s", want)
	}
}

// docs/luagen.md's list of checks is the table, as "- `name`: doc" lines.
func TestReadmeListsEveryCheck(t *testing.T) {
	readme, err := os.ReadFile("../docs/luagen.md")
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, c := range Checks() {
		want.WriteString("- `" + c.Name + "` (" + string(c.Severity) + "): " + c.Doc + "\n")
	}
	if !strings.Contains(string(readme), want.String()) {
		t.Errorf("docs/luagen.md's list of checks differs from the table in gen/lint.go; paste:\n%s", want.String())
	}
}
