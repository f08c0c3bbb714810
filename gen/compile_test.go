package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The golden output must compile, pass go vet, and work: it is copied into a
// throwaway module with the checkout's requirements and tested against
// miniredis by testdata/runtime_test.go.txt.
func TestGoldenCompilesAndRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := strings.Replace(string(gomod), "module github.com/redlimit/redlimit", "module example.com/golden", 1)
	write := func(name string, content []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte(mod))
	write("go.sum", gosum)
	for name, content := range goldenFiles(t) {
		if strings.HasSuffix(name, ".go.golden") {
			write(strings.TrimSuffix(name, ".golden"), content)
		}
	}
	rt, err := os.ReadFile("testdata/runtime_test.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	write("runtime_test.go", rt)

	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
