package server

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/routes"
)

// counting answers 200 and counts its calls.
type counting struct{ calls *atomic.Int32 }

func (c counting) Handle(context.Context, *abi.Request) (abi.Response, error) {
	c.calls.Add(1)
	return abi.Response{Status: 200}, nil
}

// A body its Content-Length declares larger than the route's cap (spec §8:
// 65,536 bytes) is refused at once with 413 body_too_large: the client is
// not asked to send it (no 100 Continue), and a Content-Length that
// promises more than arrives is not waited for until the body timeout.
func TestDeclaredOversizedBodyIsRefusedBeforeItIsRead(t *testing.T) {
	var calls atomic.Int32
	s := &Server{Routes: routes.Table, Functions: map[string]Handler{"decide": counting{&calls}}, Timeout: time.Minute,
		BodyTimeout: time.Second, Log: slog.New(slog.DiscardHandler)}
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, expect := range []string{"Expect: 100-continue\r\n", ""} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// 65,537 declared, 10 sent: the host may answer only from the header.
		_, err = conn.Write([]byte("POST /v1/service HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + expect +
			"Content-Length: 65537\r\n\r\n{\"state\":1"))
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		line, _ := r.ReadString('\n')
		var head strings.Builder
		for {
			l, err := r.ReadString('\n')
			head.WriteString(l)
			if err != nil || l == "\r\n" {
				break
			}
		}
		conn.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 413") || !strings.Contains(head.String(), "X-Service-Error-Code: body_too_large") ||
			!strings.Contains(head.String(), "X-Service-Credits: 0") {
			t.Errorf("%q: answered %q %s", expect, line, head.String())
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the function ran %d times", n)
	}
}
