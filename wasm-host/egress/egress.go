// Package egress is the host's outbound HTTP for the fetch and ai imports.
// Guests never hold secrets or sockets: they name a credential and the host
// adds it here after checking the destination against an allow-list, so a
// bug in a function cannot send the operator's key anywhere else.
//
// The calls go out through fasthttp's client, not net/http's Transport.
// The Transport hands every request to a writer goroutine and every answer
// back from a reader goroutine that each connection keeps; fasthttp writes
// and reads on the caller's goroutine. On closed16/small/embedded that cut
// the gateway's CPU per decision by about 8% (wasm-host/loadbench/MEASUREMENTS.md).
// What the Transport's reader also did was notice an idle connection the
// upstream had closed; here such a connection is only found dead when a
// request fails on it before any byte of the answer, and that request is
// sent again, once, on a new connection (retryOnDeadConnection).
package egress

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fasthttp"

	"decisiongateway/shared/abi"
)

// Defaults applied when a FetchRequest leaves them at zero. DefaultMaxBytes
// is also the most any fetch accepts, whatever it asks: the host never
// holds more of one answer.
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
	http        *fasthttp.Client
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	warm        warmConns
}

// Credential is a secret the host adds as "Authorization: Bearer <Token>".
// It is bound to one origin, so each secret (the upstream key, the mail
// service key) can only ever reach its own service, even when a guest
// names it for another allowed destination.
type Credential struct {
	Token  string
	Origin string // scheme://host[:port], as Origin returns it
	// forms are Token as an echo of it may spell it (echoForms), made once
	// by New rather than for every answer.
	forms []string
}

// Dial, when set before New, opens the client's connections: the socket
// build's modules set the WASI sockets dialer (shared/guest). Nil dials
// with net.Dialer. Connections go to the upstream directly; HTTP_PROXY and
// HTTPS_PROXY are not read.
var Dial func(ctx context.Context, network, addr string) (net.Conn, error)

// New returns a Client; each credential is only ever sent to its origin.
func New(allowed []string, credentials map[string]Credential) *Client {
	dial := Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	creds := make(map[string]Credential, len(credentials))
	for name, cr := range credentials {
		if cr.Token != "" {
			cr.forms = echoForms(cr.Token)
		}
		creds[name] = cr
	}
	c := &Client{Allowed: allowed, Credentials: creds, dial: dial}
	c.http = &fasthttp.Client{
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			if conn := c.warm.take(addr); conn != nil {
				return conn, nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return c.dial(ctx, "tcp", addr)
		},
		// Every decision in flight may hold a connection to the
		// upstream (fasthttp's default allows 512 per host).
		MaxConnsPerHost:          1 << 16,
		MaxResponseBodySize:      DefaultMaxBytes,
		ReadBufferSize:           16 << 10, // also the largest answer header
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true, // the path goes out as the guest wrote it
		RetryIfErr:               retryOnDeadConnection,
		// A redirect is returned to the guest as it is, never
		// followed (Do does not follow): following it could carry
		// the credential to another origin.
	}
	return c
}

// retryOnDeadConnection sends a request again, once, when its connection
// failed before any byte of the answer arrived: an idle kept connection
// the upstream closed as it was reused, or a reset. A timeout is never
// retried.
func retryOnDeadConnection(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	if attempts > 1 {
		return false, false
	}
	dead := errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return false, dead
}

// Origin returns scheme://host[:port] of a URL, or "".
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return originOf(u)
}

func originOf(u *url.URL) string {
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
// is what the guest needs to choose a platform error. The call ends at
// r.TimeoutMS (DefaultTimeout when 0) or ctx's deadline, whichever is
// sooner; a ctx cancelled without a deadline does not stop it (the host
// gives every request's work a deadline, not its client's connection).
func (c *Client) Fetch(ctx context.Context, r *abi.FetchRequest) abi.FetchResponse {
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" {
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "destination not allowed: "}
	}
	origin := originOf(u)
	if !c.allowed(origin) {
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "destination not allowed: " + origin}
	}
	if u.User != nil {
		// Only the host authenticates, and only with a named credential.
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "a URL with credentials in it is not fetched"}
	}
	timeout := DefaultTimeout
	if r.TimeoutMS > 0 {
		timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	maxBytes := min(int(r.MaxBytes), DefaultMaxBytes)
	if r.MaxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}

	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(r.URL)
	if got := string(req.URI().Scheme()) + "://" + string(req.URI().Host()); got != origin {
		// The client would dial what its own parser reads: it must be
		// the origin the allow-list approved.
		return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "destination not allowed: " + got}
	}
	req.Header.SetMethod(or(r.Method, "GET"))
	for _, h := range r.Headers {
		switch h.Name {
		case "authorization", "cookie", "host":
			continue // only the host authenticates, and only with a named credential
		case "accept-encoding":
			// The host asks for gzip itself and decodes it: an answer
			// the guest asked to keep compressed could not be checked for
			// the credential (below).
			continue
		case "content-length", "transfer-encoding", "connection":
			continue // the client frames the request itself
		}
		req.Header.Add(h.Name, h.Value)
	}
	var secret []string // the credential's forms; secret[0] is the token
	if r.Credential != "" {
		cred, ok := c.Credentials[r.Credential]
		if !ok || cred.Origin == "" || origin != cred.Origin {
			return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "credential not available for this destination"}
		}
		if cred.Token != "" {
			req.Header.Set("Authorization", "Bearer "+cred.Token)
			secret = cred.forms
			if secret == nil { // a Credentials entry set after New
				secret = echoForms(cred.Token)
			}
		}
	}
	req.Header.Set("Accept-Encoding", "gzip")
	req.SetBodyRaw(r.Body)
	// An answer without a Content-Type has none; fasthttp would report a
	// default.
	resp.Header.SetNoDefaultContentType(true)
	if err := c.http.DoDeadline(req, resp, deadline); err != nil {
		return failure(deadline, maxBytes, err)
	}
	body := resp.Body()
	gzipped := strings.EqualFold(string(resp.Header.ContentEncoding()), "gzip")
	if gzipped {
		var err error
		if body, err = gunzip(body, maxBytes); err != nil {
			if errors.Is(err, errTooLarge) {
				return tooLarge(maxBytes)
			}
			return abi.FetchResponse{ErrKind: abi.FetchErrConnect, ErrMsg: "the upstream's gzip answer could not be read"}
		}
	}
	if len(body) > maxBytes {
		return tooLarge(maxBytes)
	}
	var headers abi.Headers
	for name, value := range resp.Header.All() {
		lname := strings.ToLower(string(name))
		if gzipped && (lname == "content-encoding" || lname == "content-length") {
			continue // they describe the compressed body, which the guest does not get
		}
		headers = append(headers, abi.Header{Name: lname, Value: string(value)})
	}
	if secret != nil && echoes(secret, body, headers) {
		// The upstream answered with the operator's own credential, in its
		// body or a header: none of the answer may reach the guest, which
		// could pass it to a caller or a log. Nothing of it is logged here
		// either; the guest turns the kind into a platform error.
		return abi.FetchResponse{ErrKind: abi.FetchErrCredentialLeak, ErrMsg: "the answer contained the credential sent with the request; it was dropped"}
	}
	if !gzipped {
		body = append([]byte(nil), body...) // resp's buffer goes back to its pool
	}
	out := abi.FetchResponse{Status: resp.StatusCode(), Body: body}
	for _, h := range headers {
		if h.Name == "authorization" || h.Name == "set-cookie" {
			continue
		}
		out.Headers = append(out.Headers, h)
	}
	return out
}

var errTooLarge = errors.New("decoded answer too large")

// gunzip decodes a gzip body, reading at most maxBytes+1 bytes of what it
// decodes: a small body that inflates past the limit is refused without
// being inflated whole.
func gunzip(body []byte, maxBytes int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(maxBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxBytes {
		return nil, errTooLarge
	}
	return out, nil
}

func tooLarge(maxBytes int) abi.FetchResponse {
	return abi.FetchResponse{ErrKind: abi.FetchErrTooLarge, ErrMsg: fmt.Sprintf("response body over %d bytes", maxBytes)}
}

// echoForms are the spellings of secret an echo of it takes: as sent, with
// JSON's \/, percent-encoded; secret first.
func echoForms(secret string) []string {
	forms := []string{secret}
	for _, f := range []string{strings.ReplaceAll(secret, "/", `\/`), url.QueryEscape(secret), url.PathEscape(secret)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// echoes reports whether an answer contains a secret, given as its forms
// (echoForms, the secret first): in its body or in any header name or
// value, in any of the forms, and in the body once its JSON escapes are
// decoded (\u002d, up to three levels of a string inside a string); in any
// letter case (an upstream that upper-cases the Authorization it quotes
// still gives the key away). So an upstream that reflects the request it
// received cannot hand the operator's key to a guest, nor to a caller
// whose JSON parser would decode it.
func echoes(forms []string, body []byte, headers abi.Headers) bool {
	text := unsafe.String(unsafe.SliceData(body), len(body)) // read here only, while body lives
	for _, f := range forms {
		if containsFold(text, f) {
			return true
		}
		for _, h := range headers {
			if containsFold(h.Name, f) || containsFold(h.Value, f) {
				return true
			}
		}
	}
	decoded := body
	for range maxEscapeLevels {
		if bytes.IndexByte(decoded, '\\') < 0 {
			break
		}
		decoded = unescapeJSON(decoded)
		if containsFold(string(decoded), forms[0]) {
			return true
		}
	}
	return false
}

// containsFold reports whether text holds needle in any letter case,
// without copying text. It looks for an anchor with strings.IndexByte (the
// first byte of needle that has no case, a digit or a sign; else needle's
// first letter in either case) and compares with strings.EqualFold there:
// an answer's scan costs about what strings.Contains costs.
func containsFold(text, needle string) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	k := 0
	for k < n && isASCIILetter(needle[k]) {
		k++
	}
	if k == n { // letters only: the first, in each case
		// next finds c at or after from, as an index into text (-1: none).
		next := func(c byte, from int) int {
			if i := strings.IndexByte(text[from:], c); i >= 0 {
				return from + i
			}
			return -1
		}
		lo, up := needle[0]|0x20, needle[0]&^0x20
		i, j := next(lo, 0), next(up, 0)
		for i >= 0 || j >= 0 {
			at := i
			if i < 0 || (j >= 0 && j < i) {
				at = j
			}
			if at+n > len(text) {
				return false
			}
			if strings.EqualFold(text[at:at+n], needle) {
				return true
			}
			if at == i {
				i = next(lo, at+1)
			} else {
				j = next(up, at+1)
			}
		}
		return false
	}
	anchor := needle[k]
	for from := k; from < len(text); {
		i := strings.IndexByte(text[from:], anchor)
		if i < 0 {
			return false
		}
		at := from + i - k
		if at+n <= len(text) && strings.EqualFold(text[at:at+n], needle) {
			return true
		}
		from += i + 1
	}
	return false
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// maxEscapeLevels is how many times echoes decodes a body's JSON escapes:
// a JSON string that holds JSON text escapes it again, and a caller may
// decode each level.
const maxEscapeLevels = 3

// unescapeJSON returns text with every JSON escape sequence decoded, in or
// out of a string (a lone surrogate as U+FFFD), and anything else (an
// unknown or cut escape) left as it was: the text need not be valid JSON.
func unescapeJSON(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '\\' || i+1 == len(text) {
			out = append(out, c)
			continue
		}
		switch e := text[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
			i++
		case 'b', 'f', 'n', 'r', 't':
			out = append(out, "\b\f\n\r\t"[strings.IndexByte("bfnrt", e)])
			i++
		case 'u':
			r, n := unicodeEscape(text[i:])
			if n == 0 {
				out = append(out, c)
				continue
			}
			out = utf8.AppendRune(out, r)
			i += n - 1
		default:
			out = append(out, c)
		}
	}
	return out
}

// unicodeEscape decodes the \uXXXX at the start of text, or a surrogate
// pair of two, returning the rune and the bytes it took (0 if none).
func unicodeEscape(text []byte) (rune, int) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(text)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if lo, ok := hex4(text[6:]); ok {
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				return pair, 12
			}
		}
	}
	return r, 6
}

func failure(deadline time.Time, maxBytes int, err error) abi.FetchResponse {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return tooLarge(maxBytes)
	}
	var ne net.Error
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &ne) && ne.Timeout()) || !time.Now().Before(deadline) {
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
