// Package egress is the host's outbound HTTP for the fetch and ai imports.
// Guests never hold secrets or sockets: they name a credential and the host
// adds it here after checking the destination against an allow-list, so a
// bug in a function cannot send the operator's key anywhere else.
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"decisiongateway/shared/abi"
)

// Defaults applied when a FetchRequest leaves them at zero.
const (
	DefaultTimeout  = 60 * time.Second
	DefaultMaxBytes = 4 << 20
)

// Client performs guest fetches.
type Client struct {
	// Allowed are the origins (scheme://host:port) a guest may reach.
	Allowed []string
	// Credentials maps a credential name (abi.FetchRequest.Credential) to
	// its token and the one origin it may be sent to.
	Credentials map[string]Credential
	HTTP        *http.Client
}

// Credential is a secret the host adds as "Authorization: Bearer <Token>".
// It is bound to one origin, so each secret (the upstream key, the mail
// service key) can only ever reach its own service, even when a guest
// names it for another allowed destination.
type Credential struct {
	Token  string
	Origin string // scheme://host[:port], as Origin returns it
}

// New returns a Client; each credential is only ever sent to its origin.
func New(allowed []string, credentials map[string]Credential) *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &Client{
		Allowed:     allowed,
		Credentials: credentials,
		HTTP: &http.Client{
			Transport: t,
			// A redirect is returned to the guest as it is, never followed:
			// following it could carry the credential to another origin.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Origin returns scheme://host[:port] of a URL, or "".
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

func (c *Client) allowed(origin string) bool {
	for _, a := range c.Allowed {
		if a == origin {
			return true
		}
	}
	return false
}

// Fetch performs r. It never returns an error: failures are ErrKinds, which
// is what the guest needs to choose a platform error.
func (c *Client) Fetch(ctx context.Context, r *abi.FetchRequest) abi.FetchResponse {
	origin := Origin(r.URL)
	if origin == "" || !c.allowed(origin) {
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "destination not allowed: " + origin}
	}
	timeout := DefaultTimeout
	if r.TimeoutMS > 0 {
		timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	}
	maxBytes := int64(DefaultMaxBytes)
	if r.MaxBytes > 0 {
		maxBytes = int64(r.MaxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, or(r.Method, "GET"), r.URL, body)
	if err != nil {
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: err.Error()}
	}
	for _, h := range r.Headers {
		if h.Name == "authorization" || h.Name == "cookie" || h.Name == "host" {
			continue // only the host authenticates, and only with a named credential
		}
		if h.Name == "accept-encoding" {
			// The transport asks for gzip and decodes it itself; a body the
			// guest asked to keep compressed could not be checked for the
			// credential (below).
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	var secret string
	if r.Credential != "" {
		cred, ok := c.Credentials[r.Credential]
		if !ok || cred.Origin == "" || origin != cred.Origin {
			return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "credential not available for this destination"}
		}
		if cred.Token != "" {
			req.Header.Set("Authorization", "Bearer "+cred.Token)
			secret = cred.Token
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return failure(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return failure(ctx, err)
	}
	if int64(len(data)) > maxBytes {
		return abi.FetchResponse{ErrKind: abi.FetchErrTooLarge, ErrMsg: fmt.Sprintf("response body over %d bytes", maxBytes)}
	}
	if secret != "" && echoes(secret, data, resp.Header) {
		// The upstream answered with the operator's own credential, in its
		// body or a header: none of the answer may reach the guest, which
		// could pass it to a caller or a log. Nothing of it is logged here
		// either; the guest turns the kind into a platform error.
		return abi.FetchResponse{ErrKind: abi.FetchErrCredentialLeak, ErrMsg: "the answer contained the credential sent with the request; it was dropped"}
	}
	out := abi.FetchResponse{Status: resp.StatusCode, Body: data}
	for name, values := range resp.Header {
		lname := strings.ToLower(name)
		if lname == "authorization" || lname == "set-cookie" {
			continue
		}
		for _, v := range values {
			out.Headers = append(out.Headers, abi.Header{Name: lname, Value: v})
		}
	}
	return out
}

// echoes reports whether an answer contains secret: in its body or in any
// header name or value, as sent or in the escaped forms an echo takes
// (JSON's \/, percent-encoding), so an upstream that reflects the request
// it received cannot hand the operator's key to a guest.
func echoes(secret string, body []byte, header http.Header) bool {
	forms := []string{secret}
	for _, f := range []string{strings.ReplaceAll(secret, "/", `\/`), url.QueryEscape(secret), url.PathEscape(secret)} {
		if f != secret {
			forms = append(forms, f)
		}
	}
	for _, f := range forms {
		if bytes.Contains(body, []byte(f)) {
			return true
		}
		for name, values := range header {
			if strings.Contains(name, f) {
				return true
			}
			for _, v := range values {
				if strings.Contains(v, f) {
					return true
				}
			}
		}
	}
	return false
}

func failure(ctx context.Context, err error) abi.FetchResponse {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return abi.FetchResponse{ErrKind: abi.FetchErrTimeout, ErrMsg: "upstream did not answer in time"}
	}
	return abi.FetchResponse{ErrKind: abi.FetchErrConnect, ErrMsg: "upstream connection failed"}
}

// RunAI calls the model binding in the Workers AI REST shape:
// POST {base}/run/{model} with the input JSON, answering
// {"result":…,"success":…,"errors":[…]}. The raw answer is returned; the
// function maps it.
func (c *Client) RunAI(ctx context.Context, base string, a *abi.AIRequest) abi.AIResponse {
	if base == "" {
		return abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "no model binding configured"}
	}
	res := c.Fetch(ctx, &abi.FetchRequest{
		Method:     "POST",
		URL:        base + "/run/" + a.Model,
		Headers:    abi.Headers{{Name: "content-type", Value: "application/json"}},
		Body:       a.Input,
		Credential: abi.CredentialUpstream,
	})
	return abi.AIResponse{Status: res.Status, Output: res.Body, ErrKind: res.ErrKind, ErrMsg: res.ErrMsg}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
