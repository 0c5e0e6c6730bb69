//go:build wasip1 && socket

package guest

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"unsafe"

	"github.com/stealthrocket/net/wasip1"

	"decisiongateway/wasm-host/egress"
)

// Go's net package turns Nagle's algorithm off on every TCP connection it
// dials, but not on wasip1, where it cannot reach setsockopt: a request
// then waits for the peer's delayed ACK (40 ms on Linux) before its last
// segment leaves, and a decision's three round trips to sqld and the
// upstream took 90 ms instead of a few. So the module's HTTP connections
// ask for TCP_NODELAY through the sockets extension. wasi-go names it
// level 6 (IPPROTO_TCP), option 15; a runtime that does not know it
// refuses, and the connection is used as it is. The ledger's client dials
// through http.DefaultTransport, the egress client through egress.Dial.
const (
	tcpLevel   = 6
	tcpNoDelay = 15
)

//go:wasmimport wasi_snapshot_preview1 sock_setsockopt
func sockSetsockopt(fd int32, level, option uint32, value unsafe.Pointer, n uint32) syscall.Errno

func init() {
	egress.Dial = dialNoDelay
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.DialContext = dialNoDelay
	}
}

func dialNoDelay(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := wasip1.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				one := int32(1)
				sockSetsockopt(int32(fd), tcpLevel, tcpNoDelay, unsafe.Pointer(&one), 4)
			})
		}
	}
	return c, nil
}
