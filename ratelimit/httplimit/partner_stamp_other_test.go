//go:build !linux

package httplimit_test

import (
	"context"
	"net"
	"time"
)

// Without the kernel's receive timestamps, the partner's handler notes
// when it runs (see partner_stamp_linux_test.go).
type stampListener struct{ net.Listener }

func withConn(ctx context.Context, _ net.Conn) context.Context { return ctx }

func arrivedAt(context.Context) (time.Time, bool) { return time.Time{}, false }
