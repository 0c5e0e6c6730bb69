// Package client calls a Decision Gateway's API, POST /v1/service and
// GET /v1/models, and follows the spec's client rules (§4.1, §7, §9.4,
// §9.6) so that a caller can retry without paying twice:
//
//   - Decide gives each logical operation a new Idempotency-Key and resends
//     the same key with the same body bytes whenever an attempt's outcome is
//     unknown (a lost connection, a timeout, a 5xx that proves nothing, a
//     409 request_in_progress). Only when the gateway has confirmed that the
//     attempt under a key failed and was refunded (an upstream failure
//     answered with X-Service-Credits: 0, or 409 idempotency_failed) does it
//     start again under a new key, so at most one key of an operation is
//     ever charged.
//   - Retry-After is honoured in both forms (seconds or an HTTP date);
//     without it the wait is jittered exponential backoff. The caller's
//     context bounds the whole operation, waits included, and the attempt
//     limit bounds the number of requests: a wait that would end past the
//     deadline is not begun.
//   - Credits, request id, replay status and error classification are read
//     from the response headers only (X-Service-Credits, X-Request-Id,
//     X-Idempotency-Replayed, X-Service-Error-Code and -Source), never from
//     the body or an upstream's error text. A missing X-Service-Credits is
//     unknown, not zero.
//   - Errors that must be fixed first (authentication, input, insufficient
//     credits, an upstream refusing the request) are returned at once.
//
// The base URL includes the version, "https://gateway.example.com/v1"
// (spec §9.4); the client appends "/service" and "/models".
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Client calls one gateway with one API key. It is safe for concurrent use;
// its settings do not change after New.
type Client struct {
	base           string // ends in /v1, no trailing slash
	key            string
	http           *http.Client
	attempts       int
	backoff        backoff
	attemptTimeout time.Duration
}

// Option changes a setting of New.
type Option func(*Client)

// WithHTTPClient sends requests through hc (its Transport, proxies, TLS);
// its Timeout, if any, limits each attempt. The default is a client of its
// own with http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithAttempts limits the requests one call may send, the first included
// (default 8). Waits for request_in_progress count, since each resend uses
// rate capacity (spec §4.1 rule 3).
func WithAttempts(n int) Option { return func(c *Client) { c.attempts = max(n, 1) } }

// WithBackoff sets the jittered exponential backoff used when an answer
// gives no Retry-After: the n-th wait is drawn from [d/2, d] with
// d = min(base·2ⁿ, limit). The default is 250 ms and 8 s.
func WithBackoff(base, limit time.Duration) Option {
	return func(c *Client) { c.backoff = backoff{base: max(base, time.Millisecond), limit: max(limit, base)} }
}

// WithAttemptTimeout gives up on an attempt that has not been answered
// within d and resends it (same key, same body) while the context allows.
// The default is none: an attempt may take as long as the context does.
// Keep d above the gateway's own deadline (GATEWAY_REQUEST_TIMEOUT, 60 s by
// default) unless you would rather poll for the outcome.
func WithAttemptTimeout(d time.Duration) Option { return func(c *Client) { c.attemptTimeout = d } }

// New returns a client for the gateway at baseURL, which must be an http or
// https URL whose path ends in /v1 (a trailing slash is allowed), calling
// with apiKey as its Bearer key.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", baseURL)
	}
	base := strings.TrimSuffix(baseURL, "/")
	// No query or fragment, not even an empty one: "/v1?" + "/service"
	// would ask for /v1 with a query.
	if !strings.HasSuffix(u.Path, "/v1") && !strings.HasSuffix(u.Path, "/v1/") || strings.ContainsAny(baseURL, "?#") {
		return nil, fmt.Errorf("client: base URL %q must end in /v1, e.g. %s://%s/v1 (spec §9.4)", baseURL, u.Scheme, u.Host)
	}
	if apiKey == "" {
		return nil, errors.New("client: no API key")
	}
	c := &Client{base: base, key: apiKey, http: &http.Client{}, attempts: 8,
		backoff: backoff{base: 250 * time.Millisecond, limit: 8 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Decide runs one logical decision: req is the body of POST /v1/service, a
// json.RawMessage or []byte sent byte for byte, or any other value (such as
// Request) encoded once with encoding/json. Every attempt sends the same
// bytes. It returns the answer of the attempt that succeeded; when that
// attempt was a replay of an earlier one whose answer was lost, Replayed is
// true and Credits 0, as the gateway says, although the operation was
// charged once.
//
// On failure the error is an *Error. If its Uncertain is true the operation
// may have been charged and may still complete: call Recover with its
// IdempotencyKey and the same req to learn the outcome, rather than Decide,
// which would start a second operation.
func (c *Client) Decide(ctx context.Context, req any) (*Decision, error) {
	body, err := encode(req)
	if err != nil {
		return nil, err
	}
	return c.decide(ctx, newKey(), body, true)
}

// Recover resends req under key, the Idempotency-Key of an operation whose
// outcome is unknown (Error.IdempotencyKey of an uncertain error, or a key
// the caller chose and stored before sending), to learn that outcome: the
// retained answer (Replayed), the answer itself if the key was never used,
// or an *Error. It never changes the key, so it never starts a second
// operation under another (past the key's retention, 24 hours by default,
// the gateway takes it as new and bills it again, spec §3.1);
// idempotency_failed (refunded) and idempotency_conflict (req differs from
// what the key was used with) are returned as they are. Its error is
// Uncertain unless an answer settled the key.
func (c *Client) Recover(ctx context.Context, key string, req any) (*Decision, error) {
	body, err := encode(req)
	if err != nil {
		return nil, err
	}
	return c.decide(ctx, key, body, false)
}

// Models returns the upstream's model list (GET /v1/models). The list is
// not an allowlist (spec §4.2 rule 3). Failures that prove nothing are
// retried like a decision's; the listing charges nothing.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var out struct {
		Models []Model `json:"models"`
	}
	op := operation{name: "models", method: http.MethodGet, url: c.base + "/models"}
	a, err := c.run(ctx, &op)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(a.body, &out); err != nil || out.Models == nil {
		return nil, a.error(&op, fmt.Errorf("%w: no models list: %v", ErrInvalidAnswer, err))
	}
	return out.Models, nil
}

func (c *Client) decide(ctx context.Context, key string, body []byte, renew bool) (*Decision, error) {
	// Recover (!renew) is called on a key whose outcome is unknown: it
	// stays unknown until an answer settles it.
	op := operation{name: "decide", method: http.MethodPost, url: c.base + "/service", body: body, key: key, renew: renew, uncertain: !renew}
	a, err := c.run(ctx, &op)
	if err != nil {
		return nil, err
	}
	d := &Decision{RequestID: a.header.Get("X-Request-Id"), Credits: a.credits(), Replayed: a.header.Get("X-Idempotency-Replayed") == "true",
		Mode: a.header.Get("X-Service-Response-Mode"), IdempotencyKey: op.key, Attempts: op.sent, Header: a.header, Raw: a.body}
	if err := d.decode(body); err != nil {
		return nil, a.error(&op, err)
	}
	return d, nil
}

// operation is one call's state across its attempts.
type operation struct {
	name, method, url string
	body              []byte
	key               string // "" for models
	renew             bool   // may change key after a confirmed refund
	renewNext         bool   // the next attempt takes a new key (a confirmed refund)
	sent              int    // requests sent
	uncertain         bool   // an attempt under key may have run
}

// run sends op's attempts until one is answered with a 2xx or a failure
// that retrying cannot fix, the attempt limit is reached, or the context
// would end before the next attempt.
func (c *Client) run(ctx context.Context, op *operation) (*answer, error) {
	var last error
	for {
		if err := ctx.Err(); err != nil {
			return nil, op.fail(last, err)
		}
		a, sendErr := c.attempt(ctx, op)
		var wait time.Duration
		given := false
		switch {
		case sendErr != nil:
			last = sendErr
			if ctx.Err() != nil {
				return nil, op.fail(last, ctx.Err())
			}
		case a.status/100 == 2:
			return a, nil
		default:
			e := a.error(op, nil)
			last = e
			confirmed := e.Code == codeIdemFailed || e.Credits != nil && *e.Credits == 0
			switch classify(a.status, e.Code) {
			case stop:
				if settles(e) {
					op.uncertain = false
				}
				return nil, op.fail(e, nil)
			case refunded:
				switch {
				case op.key == "":
					// A listing charges nothing: a busy or failed upstream
					// is retried as one that never ran.
				case !op.renew:
					if confirmed {
						op.uncertain = false
					}
					return nil, op.fail(e, nil) // Recover: a new attempt is the caller's call
				case confirmed:
					op.renewNext = true // the key is settled; the next attempt is a new operation
				default: // refund not confirmed: ask again under the same key
					op.uncertain = true
				}
			case unknown:
				op.uncertain = true
			}
			wait, given = retryAfter(a.header.Get("Retry-After"), time.Now())
		}
		if op.sent >= c.attempts {
			return nil, op.fail(last, nil)
		}
		if !given {
			wait = c.backoff.wait(op.sent)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(deadline) {
			return nil, op.fail(last, context.DeadlineExceeded)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, op.fail(last, ctx.Err())
		case <-t.C:
		}
	}
}

// attempt sends one request. A transport failure marks op uncertain unless
// the request provably never left: no byte of it was written, and the
// connection was refused.
func (c *Client) attempt(ctx context.Context, op *operation) (*answer, error) {
	if c.attemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.attemptTimeout)
		defer cancel()
	}
	if op.renewNext {
		op.key, op.uncertain, op.renewNext = newKey(), false, false
	}
	// wrote notes that request bytes were written on a connection, by this
	// attempt or by the transport's own resend of it: the gateway may have
	// run it, whatever error follows.
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, op.method, op.url, bytes.NewReader(op.body))
	if err != nil {
		return nil, err
	}
	// Without GetBody the transport cannot resend a request whose body it
	// already wrote (it would, unseen, on a kept connection that died, as
	// the Idempotency-Key makes the request idempotent to it): each request
	// sent is one of WithAttempts', and the client alone decides to resend.
	req.GetBody = nil
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "decisiongateway-client/1")
	if op.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if op.key != "" {
		req.Header.Set("Idempotency-Key", op.key)
	}
	op.sent++
	resp, err := c.http.Do(req)
	if err != nil {
		if wrote.Load() || !neverSent(err) {
			op.uncertain = true
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		op.uncertain = true // the answer was lost on the way
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// maxBody bounds what is read of an answer; the gateway refuses upstream
// bodies over 4 MiB.
const maxBody = 8 << 20

// newKey returns a fresh Idempotency-Key: 128 random bits in hex, within
// the gateway's 1–255 visible ASCII characters.
func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encode turns Decide's req into the bytes every attempt sends.
func encode(req any) ([]byte, error) {
	switch r := req.(type) {
	case json.RawMessage:
		return r, nil
	case []byte:
		return r, nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the request: %w", err)
	}
	return b, nil
}
