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
