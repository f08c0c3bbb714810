package child_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlimit/redlimit/internal/child"
)

// TestTie starts a helper (this test binary again) that starts a tied
// sleep and waits; kills the helper as a test timeout or a signal would,
// with no chance to clean up; and wants the sleep gone.
func TestTie(t *testing.T) {
	if os.Getenv("CHILD_TEST_HELPER") == "1" {
		cmd := child.Tie(exec.Command("sleep", "300"))
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("pid", cmd.Process.Pid)
		time.Sleep(time.Hour) // until killed (a bare select{} would be a deadlock the runtime ends)
		os.Exit(1)
	}
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: Tie ties a child to its parent on Linux only")
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestTie$")
	helper.Env = append(os.Environ(), "CHILD_TEST_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil || perr != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper said %q (%v)", line, err)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the tied sleep (pid %d) outlived its parent by 5 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs: a zombie (killed, not yet reaped by
// whoever adopted it) does not.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
