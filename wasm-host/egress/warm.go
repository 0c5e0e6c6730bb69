package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// warmTTL is how long a connection Warm opened waits for its first request
// before it is closed: fasthttp's own limit on an idle kept connection, so
// a server that drops idle connections sooner than that is as likely to
// have dropped this one as any other (a request that finds it dead is sent
// again on a new one, retryOnDeadConnection).
const warmTTL = fasthttp.DefaultMaxIdleConnDuration

// Warm opens a connection to the server of rawURL, whose origin must be
// allowed, before any request needs it, and hands it to the first request
// that does: the first call after a host starts then does not wait for a
// TCP handshake and, to an https server, a TLS one (one or two round trips
// to a vendor in another region, each the first decision's). The TLS
// settings are the ones fasthttp would use for that request: the server is
// verified against the system's roots under its host name. Unused, the
// connection is closed after warmTTL.
func (c *Client) Warm(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" {
		return errors.New("egress: warm: not an http or https URL with a host")
	}
	if !c.allowed(originOf(u)) {
		return errors.New("egress: warm: " + originOf(u) + " is not an allowed origin")
	}
	isTLS := scheme == "https"
	// The address fasthttp dials for this URL: its host lower-cased, with
	// the scheme's port when it names none.
	addr := fasthttp.AddMissingPort(strings.ToLower(u.Host), isTLS)
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if isTLS {
		cfg, err := clientTLSConfig(c.http.TLSConfig, addr)
		if err != nil {
			conn.Close()
			return err
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		conn = tc
	}
	c.warm.put(addr, conn, warmTTL)
	return nil
}

// Close closes the connections no request holds, a warm one not yet taken
// and the kept ones, and any Warm still dialing closes what it opens.
func (c *Client) Close() {
	c.warm.closeAll()
	c.http.CloseIdleConnections()
}

// clientTLSConfig is the TLS configuration fasthttp gives a connection to
// addr: base (nil for the defaults) with the server name set from addr.
func clientTLSConfig(base *tls.Config, addr string) (*tls.Config, error) {
	cfg := &tls.Config{}
	if base != nil {
		cfg = base.Clone()
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		cfg.ServerName = host
	}
	return cfg, nil
}

// warmConns holds at most one opened connection per address until a dial
// for that address takes it or its time runs out.
type warmConns struct {
	mu     sync.Mutex
	conns  map[string]*warmConn
	closed bool // the client was closed: nothing more is kept
}

type warmConn struct {
	conn  net.Conn
	timer *time.Timer
}

func (w *warmConns) put(addr string, conn net.Conn, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conns == nil {
		w.conns = map[string]*warmConn{}
	}
	if _, ok := w.conns[addr]; ok || w.closed {
		conn.Close() // one is enough
		return
	}
	wc := &warmConn{conn: conn}
	wc.timer = time.AfterFunc(ttl, func() {
		w.mu.Lock()
		if w.conns[addr] == wc {
			delete(w.conns, addr)
			conn.Close()
		}
		w.mu.Unlock()
	})
	w.conns[addr] = wc
}

// take returns the connection opened for addr, or nil.
func (w *warmConns) take(addr string) net.Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.conns[addr]
	if wc == nil {
		return nil
	}
	delete(w.conns, addr)
	wc.timer.Stop()
	return wc.conn
}

func (w *warmConns) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for addr, wc := range w.conns {
		wc.timer.Stop()
		wc.conn.Close()
		delete(w.conns, addr)
	}
}
