package ledger

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/abi"
)

// hranaClient sends whole batches to sqld (or Turso) as one Hrana v2
// pipeline request. libsql-client-go's database/sql driver sends one request
// per statement, so an interactive transaction costs a round trip per step;
// a Hrana batch carries every step, its conditions and the COMMIT in one.
//
// The client keeps its stream (the baton of the last answer) between batches,
// as the interactive path keeps its connection: sqld opens a database
// connection for every new stream, which costs more than a whole batch.
// Only the executor's writer goroutine uses it.
type hranaClient struct {
	pipeline string // absolute URL of /v2/pipeline
	token    string
	http     *http.Client

	baton string    // the open stream, "" when none
	base  string    // where the server asked the stream's next request to go
	used  time.Time // when the stream last answered

	// wsURL is the server's Hrana-over-WebSocket endpoint (hranaws.go),
	// "" once the server answered the upgrade over HTTP: then every batch
	// goes to the pipeline endpoint.
	wsURL string
	ws    *hranaWS // the open connection, nil when none
	// rtt is the shortest WebSocket ping round trip measured so far
	// (nanoseconds; 0 before the first): how far the server is, without
	// its time to run a batch (far).
	rtt atomic.Int64

	trips *atomic.Int64 // counts requests sent (Stats.RoundTrips); may be nil

	parser fastjson.Parser // reads answers (hranajson.go)
}

// newHranaClient derives the pipeline endpoint from a remote ledger URL the
// way libsql-client-go does: libsql:// means TLS unless ?tls=0.
func newHranaClient(url, authToken string) (*hranaClient, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	switch u.Scheme {
	case "http", "https":
	case "libsql":
		u.Scheme = "https"
		if q.Get("tls") == "0" {
			u.Scheme = "http"
		}
	default:
		return nil, fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	u.RawQuery = ""
	u.Fragment = ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v2/pipeline"
	// sqld compresses an answer when asked, and Go's transport asks by
	// default: gzip cost the server more CPU per batch than running it,
	// and the writer as much again to inflate it. Answers are a few KiB on
	// a near link; they travel as they are.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	ws := *u
	ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	ws.Path = strings.TrimSuffix(ws.Path, "/v2/pipeline")
	return &hranaClient{pipeline: u.String(), wsURL: ws.String(), token: authToken, http: &http.Client{Transport: t}}, nil
}

// The JSON shapes of Hrana v2 that the executor uses: the steps it sends
// (the envelopes around them are written in hranajson.go) and the answers.
type (
	hranaStep struct {
		Stmt      hranaStmt  `json:"stmt"`
		Condition *hranaCond `json:"condition,omitempty"`
	}
	hranaStmt struct {
		SQL      string       `json:"sql"`
		Args     []hranaValue `json:"args,omitempty"`
		WantRows bool         `json:"want_rows"`
	}
	hranaCond struct {
		Type  string      `json:"type"`
		Step  *int        `json:"step,omitempty"`
		Cond  *hranaCond  `json:"cond,omitempty"`
		Conds []hranaCond `json:"conds,omitempty"`
	}
	hranaValue struct {
		Type   string  `json:"type"`
		Value  any     `json:"value,omitempty"`
		Base64 *string `json:"base64,omitempty"`
	}

	hranaResponse struct {
		Baton   *string       `json:"baton"`
		BaseURL *string       `json:"base_url"`
		Results []hranaResult `json:"results"`
	}
	hranaResult struct {
		Type     string        `json:"type"`
		Response *hranaBatchRs `json:"response"`
		Error    *hranaError   `json:"error"`
	}
	// hranaBatchRs is the answer to a batch request, on either transport.
	hranaBatchRs struct {
		Type   string           `json:"type"`
		Result hranaBatchResult `json:"result"`
	}
	hranaBatchResult struct {
		StepResults []*hranaStmtResult `json:"step_results"`
		StepErrors  []*hranaError      `json:"step_errors"`
	}
	hranaStmtResult struct {
		Cols             []hranaCol     `json:"cols"`
		Rows             [][]hranaValue `json:"rows"`
		AffectedRowCount int64          `json:"affected_row_count"`
		LastInsertRowid  *string        `json:"last_insert_rowid"`
	}
	hranaCol struct {
		Name     *string `json:"name"`
		Decltype *string `json:"decltype"`
	}
	hranaError struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
)

// errNotSent marks a failure that happened before the request could reach
// the server (the connection was never made), so nothing ran.
var errNotSent = errors.New("request not sent")

// batch runs steps as one Hrana batch on the kept stream, over WebSocket
// unless the server refused the upgrade, and returns the batch's result.
// An error means the batch has no result: either the request did not get
// through or the server refused it as a whole.
func (c *hranaClient) batch(ctx context.Context, steps []hranaStep) (*hranaBatchResult, error) {
	if c.wsURL != "" {
		res, err := c.wsBatch(ctx, steps)
		if !errors.Is(err, errNoWebSocket) {
			return res, err
		}
		c.wsURL = ""
	}
	if c.baton != "" && time.Since(c.used) > streamIdle {
		c.reset() // the server may have expired it; do not find out the slow way
	}
	reused := c.baton != ""
	res, err := c.send(ctx, steps)
	if err != nil && reused && errors.Is(err, errRefused) {
		// Most likely the kept stream expired on the server. Nothing ran,
		// so the batch goes again on a new stream.
		res, err = c.send(ctx, steps)
	}
	return res, err
}

// reset forgets the kept stream; the server closes it when it expires.
// Used after any failure that leaves the stream's state unknown.
func (c *hranaClient) reset() {
	c.baton, c.base = "", ""
	c.dropWS()
}

// close ends the kept stream, if any, so the server can free it at once.
// The writer has taken every answer due by then.
func (c *hranaClient) close() {
	if c.ws != nil {
		c.lose(c.ws)
	}
	if c.baton == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	baton := c.baton
	body, _ := appendPipeline(nil, &baton, nil)
	if req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url(), bytes.NewReader(body)); err == nil {
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		c.trip()
		if resp, err := c.http.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	c.reset()
}

func (c *hranaClient) trip() {
	if c.trips != nil {
		c.trips.Add(1)
	}
}

func (c *hranaClient) url() string {
	if c.base != "" {
		return c.base
	}
	return c.pipeline
}

// send makes one pipeline request on the kept stream (or a new one).
func (c *hranaClient) send(ctx context.Context, steps []hranaStep) (*hranaBatchResult, error) {
	var baton *string
	if c.baton != "" {
		b := c.baton
		baton = &b
	}
	target := c.url()
	// Until the answer says otherwise the stream is in an unknown state.
	c.reset()
	body, err := appendPipeline(nil, baton, steps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	c.trip()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		// The same text libsql-client-go reports, so isTransport and the
		// messages callers see do not depend on the path a batch took.
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
			// A proxy's answer (sqld sends neither): it may have passed
			// the request on and given up on the answer, so the batch may
			// have run. Not a refusal, which would be retried and could
			// apply it twice; a transport failure, whose COMMIT's outcome
			// is unknown, as src/ledger.js on Workers has it.
			return nil, fmt.Errorf("hrana: error code %d: %s", resp.StatusCode, msg)
		}
		return nil, fmt.Errorf("%w: error code %d: %s", errRefused, resp.StatusCode, msg)
	}
	out, err := parsePipeline(&c.parser, raw)
	if err != nil {
		// The server answered, so the batch may have committed.
		return nil, fmt.Errorf("hrana: bad response: %v: %w", err, driver.ErrBadConn)
	}
	if len(out.Results) == 0 {
		return nil, fmt.Errorf("hrana: no response received: %w", driver.ErrBadConn)
	}
	if out.Baton != nil {
		c.baton, c.used = *out.Baton, time.Now()
		if out.BaseURL != nil && *out.BaseURL != "" {
			if u, err := neturl.JoinPath(*out.BaseURL, "/v2/pipeline"); err == nil {
				c.base = u
			}
		}
	}
	r := out.Results[0]
	if r.Error != nil {
		return nil, fmt.Errorf("%w: %s", errRefused, r.Error.Message)
	}
	return complete(r.Response, steps)
}

// complete returns the batch's result when rs is one that answers every
// step, and otherwise an error that leaves the batch's outcome unknown.
func complete(rs *hranaBatchRs, steps []hranaStep) (*hranaBatchResult, error) {
	if rs == nil || rs.Type != "batch" {
		return nil, fmt.Errorf("hrana: no batch result received: %w", driver.ErrBadConn)
	}
	res := &rs.Result
	if len(res.StepResults) != len(steps) || len(res.StepErrors) != len(steps) {
		return nil, fmt.Errorf("hrana: %d results and %d errors for %d steps: %w", len(res.StepResults), len(res.StepErrors), len(steps), driver.ErrBadConn)
	}
	return res, nil
}

// errRefused marks an answer in which the server refused the request as a
// whole (HTTP status or a stream error): no step ran.
var errRefused = errors.New("refused")

// toHrana converts one argument. Blobs are sent without padding, as Hrana
// servers expect; an empty blob stays a blob.
func toHrana(v abi.Value) hranaValue {
	switch v.Kind {
	case abi.Integer:
		return hranaValue{Type: "integer", Value: strconv.FormatInt(v.Int, 10)}
	case abi.Float:
		return hranaValue{Type: "float", Value: v.Float}
	case abi.Text:
		return hranaValue{Type: "text", Value: v.Str}
	case abi.Blob:
		b := base64.RawStdEncoding.EncodeToString(v.Bytes)
		return hranaValue{Type: "blob", Base64: &b}
	}
	return hranaValue{Type: "null"}
}

// fromHrana converts a result cell exactly as the interactive path sees it
// through libsql-client-go, so both paths return the same values: text in a
// TIMESTAMP or DATETIME column comes back normalised as a time (see the
// package comment), everything else as its storage class.
func fromHrana(v hranaValue, decltype *string) abi.Value {
	switch v.Type {
	case "integer":
		s, _ := v.Value.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return abi.Value{}
		}
		return abi.Int64(n)
	case "float":
		f, ok := v.Value.(float64)
		if !ok {
			return abi.Value{}
		}
		return abi.Float64(f)
	case "text":
		s, _ := v.Value.(string)
		if decltype != nil {
			switch strings.ToLower(*decltype) {
			case "timestamp", "datetime":
				if t, ok := parseTime(s); ok {
					return abi.String(formatTime(t))
				}
			}
		}
		return abi.String(s)
	case "blob":
		if v.Base64 == nil {
			return abi.Value{}
		}
		b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(*v.Base64, "="))
		if err != nil {
			return abi.Value{}
		}
		return abi.Bytes(b)
	}
	return abi.Value{}
}

// timeLayouts are the text forms of SQLite's date and time functions, the
// ones libsql-client-go recognises in date-typed columns.
var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

func parseTime(s string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
