package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A pong the server sends unasked (a heartbeat) is not a ping's answer:
// a server that answers pings 5 ms late is measured far even though it
// sends a pong at once every time it is pinged. Were any pong taken, the
// writer would think it near and stop pipelining to it.
func TestUnaskedPongsDoNotMeasureAServerNear(t *testing.T) {
	const late = 5 * time.Millisecond
	up := websocket.Upgrader{Subprotocols: []string{wsSubprotocol}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetPingHandler(func(payload string) error {
			c.WriteControl(websocket.PongMessage, []byte("heartbeat"), time.Now().Add(time.Second))
			time.AfterFunc(late, func() {
				c.WriteControl(websocket.PongMessage, []byte(payload), time.Now().Add(time.Second))
			})
			return nil
		})
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m struct {
				Type      string
				RequestID int64 `json:"request_id"`
			}
			json.Unmarshal(b, &m)
			switch m.Type {
			case "hello":
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello_ok"}`))
			case "request":
				c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"response_ok","request_id":%d,"response":{"type":"open_stream"}}`, m.RequestID))
			}
		}
	}))
	defer srv.Close()

	c, err := newHranaClient(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := c.dialWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.drop()
	waitUntil(t, "a ping is answered", func() bool { return c.rtt.Load() != 0 })
	time.Sleep(pings * pingGap) // and the first few after it
	if d := time.Duration(c.rtt.Load()); d < late || !c.far() {
		t.Fatalf("measured %v (far %v), want at least %v", d, c.far(), late)
	}
}
