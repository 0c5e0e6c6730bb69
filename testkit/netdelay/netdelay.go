// Package netdelay is a TCP relay that delays what it forwards: a server
// on this machine made to look a round trip away (a ledger in another zone
// or region), for the load benchmark (loadbench -ledger-rtt).
package netdelay

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Relay holds every byte it forwards, in each direction, for at least a
// fixed time. Bytes keep their order; a connection closed on one side is
// closed on the other once what was read before has been delivered.
type Relay struct {
	URL    string // http://host:port of the relay
	ln     net.Listener
	target string // host:port it forwards to
	delay  time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and forwards each connection to
// target (an http:// URL or host:port), delaying each direction by oneWay.
func Start(target string, oneWay time.Duration) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{URL: "http://" + ln.Addr().String(), ln: ln, target: strings.TrimPrefix(target, "http://"),
		delay: oneWay, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	return r, nil
}

func (r *Relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.serve(c) })
	}
}

// track remembers c so close can end it; it reports false once closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) serve(client net.Conn) {
	server, err := net.Dial("tcp", r.target)
	if err != nil {
		client.Close()
		return
	}
	if !r.track(client) || !r.track(server) {
		client.Close()
		server.Close()
		return
	}
	var both sync.WaitGroup
	both.Go(func() { r.forward(server, client) })
	both.Go(func() { r.forward(client, server) })
	both.Wait()
	client.Close()
	server.Close()
	r.mu.Lock()
	delete(r.conns, client)
	delete(r.conns, server)
	r.mu.Unlock()
}

// chunk is what one read returned, and when it may be written on.
type chunk struct {
	due  time.Time
	data []byte
}

// forward copies src to dst, each read held until delay after it was read.
// Reading goes on while earlier chunks wait, so the delay is added once,
// not once per chunk.
func (r *Relay) forward(dst, src net.Conn) {
	pending := make(chan chunk, 1024)
	var writer sync.WaitGroup
	writer.Go(func() {
		for c := range pending {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.data); err != nil {
				src.Close() // the reader stops at its next read
				for range pending {
				}
				return
			}
		}
		// src ended: pass the end on.
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		} else {
			dst.Close()
		}
	})
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pending <- chunk{due: time.Now().Add(r.delay), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			break
		}
	}
	close(pending)
	writer.Wait()
}

// Close stops accepting and ends every relayed connection.
func (r *Relay) Close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
