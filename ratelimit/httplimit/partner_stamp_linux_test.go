package httplimit_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// stampListener's connections read with the kernel's receive timestamps
// (SO_TIMESTAMPNS): when a request's bytes reached the partner's host,
// whenever its handler gets to run. On loopback that is the instant the
// caller's write put them on the wire.
type stampListener struct{ net.Listener }

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil
	}
	return &stampConn{TCPConn: tc, raw: raw, oob: make([]byte, 128)}, nil
}

type stampConn struct {
	*net.TCPConn
	raw  syscall.RawConn
	oob  []byte
	last atomic.Int64 // the receive timestamp of the last read, in Unix ns
}

func (c *stampConn) Read(p []byte) (int, error) {
	var n, oobn int
	var err error
	rerr := c.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = syscall.Recvmsg(int(fd), p, c.oob, 0)
		return err != syscall.EAGAIN
	})
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	msgs, err := syscall.ParseSocketControlMessage(c.oob[:oobn])
	if err != nil {
		return n, nil
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			c.last.Store(sec*1e9 + nsec)
		}
	}
	return n, nil
}

type connKey struct{}

// withConn is the server's ConnContext: a handler finds its connection.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// arrivedAt is when the request of ctx reached the host, by the kernel,
// or false when its connection has no timestamps.
func arrivedAt(ctx context.Context) (time.Time, bool) {
	c, ok := ctx.Value(connKey{}).(*stampConn)
	if !ok || c.last.Load() == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, c.last.Load()), true
}
