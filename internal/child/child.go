// Package child ties the processes that tests and benchmarks start beside
// them (redis-server, the reference rate limit service, the demo, busy
// loops) to the process that started them: they are killed when it dies,
// however it dies. A deferred stop or t.Cleanup runs only when the binary
// ends well; a test that times out panics past them, and a binary killed
// by a signal runs nothing, which left servers holding their ports and
// busy loops burning a core after the run.
package child

import "os/exec"

// Tie makes cmd's process get SIGKILL when the process that starts it
// dies, and returns cmd; call it before cmd.Start. On Linux this is the
// kernel's parent-death signal (prctl PR_SET_PDEATHSIG), which follows
// the OS thread that forks the child: Go keeps its threads for the life
// of the process, except one a goroutine locked (runtime.LockOSThread) and
// left locked, which no code here does. Elsewhere Tie changes nothing, and
// a stop that does not run leaves the process behind, as before.
func Tie(cmd *exec.Cmd) *exec.Cmd {
	tie(cmd)
	return cmd
}
