package netdelay

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers every connection with what it sends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// throughRelay starts a relay delaying oneWay in front of an echo server and
// returns it with a client connection through it; both end with the test.
func throughRelay(t *testing.T, oneWay time.Duration) (*Relay, *net.TCPConn) {
	t.Helper()
	r, err := Start("http://"+echoServer(t), oneWay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return r, c.(*net.TCPConn)
}

func TestDelayRelayHoldsEachDirectionAndKeepsTheBytes(t *testing.T) {
	const oneWay = 30 * time.Millisecond
	_, c := throughRelay(t, oneWay)

	// A round trip waits for both directions.
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); string(got) != "ping" || rtt < 2*oneWay {
		t.Fatalf("round trip: %q after %s; want ping after at least %s", got, rtt, 2*oneWay)
	}

	// A large message, written in many reads, comes back whole and in order,
	// delayed once rather than once per chunk.
	want := make([]byte, 4<<20)
	rand.Read(want)
	start = time.Now()
	go c.Write(want)
	back := make([]byte, len(want))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, want) {
		t.Fatal("the relay changed or reordered the bytes")
	}
	if d := time.Since(start); d < 2*oneWay {
		t.Fatalf("4 MiB came back after %s, before the relay's delay", d)
	}
}

func TestDelayRelayPassesTheEndOn(t *testing.T) {
	_, c := throughRelay(t, time.Millisecond)
	c.Write([]byte("last words"))
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("after closing its side the client read %q, %v; want the echo, then the end", got, err)
	}
}

func TestDelayRelayCloseEndsItsConnections(t *testing.T) {
	r, c := throughRelay(t, time.Millisecond)
	c.Write([]byte("x"))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes after Close; want the connection ended", n)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://")); err == nil {
		t.Error("the relay still accepts after Close")
	}
}
