package client_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"decisiongateway/client"
)

// The gateway process dies after it settled a decision and while its
// answer is on the way: the client never gets it, keeps resending the same
// key and body while the host is down and restarting on the same ledger,
// and receives the settled decision as a replay. Charged exactly once.
func TestHostKilledAfterSettlingRecoversByReplay(t *testing.T) {
	h, v := startHost(t, nil) // the ledger, its accounts and the vendor
	acct, key := h.NewAccount(email(), 10)
	gw := startProcess(t, h.App.Config.LedgerURL, v.URL)
	restarted := make(chan struct{})
	// Between client and gateway: the first answer the gateway writes is
	// the settled decision; the gateway is killed before a byte of it
	// reaches the client, then started again.
	p := newCutProxy(t, gw.addr, func() {
		gw.kill()
		go func() { gw.start(); close(restarted) }()
	})
	c := newClient(t, "http://"+p.addr, key, client.WithAttempts(30), client.WithBackoff(50*time.Millisecond, time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, apple)
	if err != nil {
		t.Fatal(err)
	}
	<-restarted
	if !p.wasCut() || !d.Replayed || *d.Credits != 0 || d.Attempts < 2 || d.Answers["fruit"].Choice != "apple" {
		t.Fatalf("cut %v replayed %v credits %d attempts %d", p.wasCut(), d.Replayed, *d.Credits, d.Attempts)
	}
	if rows := attemptRows(h, acct); len(rows) != 1 || rows[0] != d.RequestID+" "+d.IdempotencyKey+" succeeded 1" {
		t.Fatalf("ledger attempts %q, replay's request id %s", rows, d.RequestID)
	}
	if n := len(v.decisions()); n != 1 {
		t.Fatalf("the vendor was asked %d times", n)
	}
	checkCharged(t, h, acct, 10, 1)
}

// The gateway process dies while the vendor is still thinking: the
// attempt stays pending. Restarted on the same ledger, the gateway answers
// the client's resends of the same key 409 request_in_progress until the
// attempt's lease ends, then settles it as failed and refunded; the client,
// told so (idempotency_failed), starts again under a new key. The account
// pays for one decision.
func TestHostKilledMidUpstreamCallRecoversWithOneCharge(t *testing.T) {
	const timeout = "1s" // the lease is the deadline + 5 s
	h, v := startHost(t, map[string]string{"GATEWAY_REQUEST_TIMEOUT": timeout})
	acct, key := h.NewAccount(email(), 10)
	gw := startProcess(t, h.App.Config.LedgerURL, v.URL, "GATEWAY_REQUEST_TIMEOUT="+timeout)
	hung := make(chan struct{})
	t.Cleanup(func() { close(hung) })
	restarted := make(chan struct{})
	v.answerWith(func(n int, w http.ResponseWriter, body []byte) {
		if n == 1 { // the host dies while this call is out
			go func() { gw.kill(); gw.start(); close(restarted) }()
			<-hung
			return
		}
		answer(w, body)
	})
	var mu sync.Mutex
	var told []string // the error codes the client was answered with
	record := observed{on: func(r *http.Response) {
		mu.Lock()
		told = append(told, r.Header.Get("X-Service-Error-Code"))
		mu.Unlock()
	}}
	c := newClient(t, gw.url(), key, client.WithAttempts(40), client.WithBackoff(50*time.Millisecond, time.Second),
		client.WithHTTPClient(&http.Client{Transport: record}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, apple)
	if err != nil {
		t.Fatal(err)
	}
	<-restarted
	mu.Lock()
	defer mu.Unlock()
	if *d.Credits != 1 || d.Replayed || !slices.Contains(told, "idempotency_failed") {
		t.Fatalf("credits %d replayed %v after answers %q", *d.Credits, d.Replayed, told)
	}
	rows := attemptRows(h, acct)
	if len(rows) != 2 || keyOf(rows[0]) == d.IdempotencyKey || rows[0][len(rows[0])-8:] != "failed 0" ||
		rows[1] != d.RequestID+" "+d.IdempotencyKey+" succeeded 1" {
		t.Fatalf("ledger attempts %q; answer %s under %s", rows, d.RequestID, d.IdempotencyKey)
	}
	checkCharged(t, h, acct, 10, 1)
}

// cutProxy forwards TCP connections to a backend. The first time the
// backend starts answering, it calls cut and closes the client's
// connection without passing a byte on; afterwards it only forwards.
type cutProxy struct {
	addr string
	mu   sync.Mutex
	cut  func()
	done bool
}

func newCutProxy(t *testing.T, backend string, cut func()) *cutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: l.Addr().String(), cut: cut}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(conn, backend)
		}
	}()
	return p
}

func (p *cutProxy) wasCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *cutProxy) serve(conn net.Conn, backend string) {
	defer conn.Close()
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return // the client sees its connection closed, as with a dead host
	}
	defer up.Close()
	go io.Copy(up, conn)
	first := make([]byte, 1)
	if _, err := io.ReadFull(up, first); err != nil {
		return
	}
	p.mu.Lock()
	cutNow := !p.done
	p.done = true
	p.mu.Unlock()
	if cutNow {
		p.cut()
		conn.(*net.TCPConn).SetLinger(0) // a reset, as a dead host's kernel sends
		return
	}
	conn.Write(first)
	io.Copy(conn, up)
}
