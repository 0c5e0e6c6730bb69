package egress

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Preconnect opens a connection to origin (scheme://host[:port], one of
// the allowed ones) and leaves it in the client's pool, so that the first
// fetch there does not wait for TCP and TLS handshakes: the first decision
// after a host starts would otherwise pay them, tens of milliseconds to a
// distant vendor. Go's transport only pools the connections of requests
// it made, so it sends one: `OPTIONS *` (RFC 9110, 9.3.7), which asks
// about the server as a whole and names no resource, without credentials.
// Whatever the answer, the connection stays open if the server keeps it;
// errors are ignored, the first fetch then connects as it always did. It
// reports whether a response came back.
func (c *Client) Preconnect(ctx context.Context, origin string) bool {
	if !c.allowed(origin) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, origin, nil)
	if err != nil {
		return false
	}
	req.URL.Path, req.URL.RawPath, req.URL.Opaque = "", "", "*"
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return false
	}
	// Reading the (small) body to its end lets the connection be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return true
}
