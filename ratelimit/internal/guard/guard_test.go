package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestNodeFailed(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("gcra.lua: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), true},
		{io.EOF, true},
		{os.ErrDeadlineExceeded, true}, // go-redis's bare "i/o timeout"
		{fmt.Errorf("gcra.lua: %w", os.ErrDeadlineExceeded), true},
		{replyErr("LOADING Redis is loading the dataset in memory"), true},
		{replyErr("CLUSTERDOWN The cluster is down"), true},
		{replyErr("MASTERDOWN Link with MASTER is down"), true},
		{replyErr("READONLY You can't write against a read only replica."), false},
		{replyErr("BADARG cost"), false},
		{replyErr("OOM command not allowed"), false},
		{errors.New("redis: connection pool timeout"), false},
		{context.DeadlineExceeded, false},
	} {
		if got := nodeFailed(tt.err); got != tt.want {
			t.Errorf("nodeFailed(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestFirstKey(t *testing.T) {
	for _, tt := range []struct {
		args []interface{}
		want string
	}{
		{[]interface{}{"evalsha", "abc", 1, "k", "1"}, "k"},
		{[]interface{}{"fcall", "f", 2, "k1", "k2"}, "k1"},
		{[]interface{}{"evalsha", "abc", 0, "a"}, ""},
		{[]interface{}{"ping"}, ""},
	} {
		if got := firstKey(tt.args); got != tt.want {
			t.Errorf("firstKey(%v) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
