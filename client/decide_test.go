package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"decisiongateway/client"
	"decisiongateway/shared/abi"
	"decisiongateway/testkit/hosttest"
)

// attemptRows returns the account's decision attempts in order: their
// idempotency key, state and charge.
func attemptRows(h *hosttest.Host, acct string) []string {
	var out []string
	for _, r := range h.Rows(`SELECT id, idem_key, state, charged FROM requests WHERE account_id = ? ORDER BY created_at, rowid`, abi.String(acct)) {
		out = append(out, fmt.Sprintf("%s %s %s %d", r[0].AsString(), r[1].AsString(), r[2].AsString(), r[3].AsInt()))
	}
	return out
}

// Each Decide is a new logical operation under a new key, charged once;
// the credits, request id, replay status and mode come from the headers,
// the answers from the body, whose extension fields are tolerated.
func TestDecideIsOneOperationPerCallWithFactsFromHeaders(t *testing.T) {
	h, _ := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	c := newClient(t, h.URL, key)
	var keysSeen []string
	for i := 0; i < 2; i++ {
		d, err := c.Decide(context.Background(), apple)
		if err != nil {
			t.Fatal(err)
		}
		if d.Credits == nil || *d.Credits != 1 || d.Replayed || d.Mode != "vendor-native" || d.Attempts != 1 {
			t.Fatalf("decision %d: credits %v replayed %v mode %q attempts %d", i, d.Credits, d.Replayed, d.Mode, d.Attempts)
		}
		a := d.Answers["fruit"]
		if d.Model != "model-x-2026" || a.Type != "choice" || a.Choice != "apple" || a.Probabilities["pear"] != 0.5 || *d.Usage.InputTokens != 9 {
			t.Fatalf("decision %d: %+v %+v", i, d, a)
		}
		if !strings.Contains(string(d.Raw), `"vendor_extra":true`) {
			t.Fatalf("raw body lost its extension field: %s", d.Raw)
		}
		rows := attemptRows(h, acct)
		if want := d.RequestID + " " + d.IdempotencyKey + " succeeded 1"; len(rows) != i+1 || rows[i] != want {
			t.Fatalf("ledger attempts %q, want the last to be %q", rows, want)
		}
		keysSeen = append(keysSeen, d.IdempotencyKey)
	}
	if keysSeen[0] == keysSeen[1] {
		t.Fatal("two operations shared an Idempotency-Key")
	}
	checkCharged(t, h, acct, 10, 2)
}

// A client whose attempt times out resends the same key and body: the
// gateway's 409 request_in_progress (Retry-After: 2) is waited out, and the
// answer comes as a replay of the attempt that ran, charged once.
func TestAttemptTimeoutThenRecoveringRetryChargesOnce(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	gate, hc := gateOn409(t)
	v.answerWith(func(_ int, w http.ResponseWriter, body []byte) { <-gate; answer(w, body) })
	c := newClient(t, h.URL, key, client.WithAttemptTimeout(time.Second), client.WithAttempts(20), client.WithHTTPClient(hc))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, apple)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Replayed || d.Credits == nil || *d.Credits != 0 || d.Attempts < 3 {
		t.Fatalf("replayed %v credits %v attempts %d, want a replay after at least 3 attempts", d.Replayed, d.Credits, d.Attempts)
	}
	if n := len(v.decisions()); n != 1 {
		t.Fatalf("the vendor was asked %d times", n)
	}
	if rows := attemptRows(h, acct); len(rows) != 1 || rows[0] != d.RequestID+" "+d.IdempotencyKey+" succeeded 1" {
		t.Fatalf("ledger attempts %q; the replay's request id %s", rows, d.RequestID)
	}
	checkCharged(t, h, acct, 10, 1)
}

// When the caller's own deadline passes first, Decide says the outcome is
// unknown and names the key; Recover with it and the same request learns
// the outcome without a second charge, and refuses a different request.
func TestDeadlineThenRecoverChargesOnce(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	gate, hc := gateOn409(t)
	arrived := make(chan struct{})
	v.answerWith(func(_ int, w http.ResponseWriter, body []byte) { close(arrived); <-gate; answer(w, body) })
	c := newClient(t, h.URL, key, client.WithAttempts(20), client.WithHTTPClient(hc))

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }() // the caller gives up while the vendor thinks
	_, err := c.Decide(ctx, apple)
	var e *client.Error
	if !errors.As(err, &e) || !e.Uncertain || e.IdempotencyKey == "" || !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide after the caller gave up: %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := c.Recover(ctx, e.IdempotencyKey, apple)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Replayed || *d.Credits != 0 || d.IdempotencyKey != e.IdempotencyKey || d.Answers["fruit"].Choice != "apple" {
		t.Fatalf("recovered: replayed %v credits %v key %q", d.Replayed, *d.Credits, d.IdempotencyKey)
	}
	other := apple
	other.State = "a green pear"
	var conflict *client.Error
	// The key completed with the right request: the wrong one learns
	// nothing of it, and the outcome stays to learn (Uncertain).
	if _, err = c.Recover(ctx, e.IdempotencyKey, other); !errors.As(err, &conflict) || conflict.Code != "idempotency_conflict" || conflict.Attempts != 1 || !conflict.Uncertain {
		t.Fatalf("Recover with another request after completion: %v", err)
	}
	if n := len(v.decisions()); n != 1 {
		t.Fatalf("the vendor was asked %d times", n)
	}
	checkCharged(t, h, acct, 10, 1)
}

// A busy vendor's Retry-After reaches the client exactly as sent, in
// either form, and the client waits at least that long; each busy answer
// was refunded (X-Service-Credits: 0), so the next attempt is a new one
// under a new key, and the operation is charged once.
func TestRetryAfterSecondsAndDateHonoured(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	var notBefore time.Time
	v.answerWith(func(n int, w http.ResponseWriter, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
		case 2:
			// An HTTP date has whole seconds: at least one second ahead.
			notBefore = time.Now().Add(2 * time.Second).Truncate(time.Second)
			w.Header().Set("Retry-After", notBefore.UTC().Format(http.TimeFormat))
		default:
			answer(w, body)
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"type":"rate_limit","message":"slow down"}}`)
	})
	c := newClient(t, h.URL, key, client.WithBackoff(time.Millisecond, time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, apple)
	if err != nil {
		t.Fatal(err)
	}
	at := v.decisions()
	if len(at) != 3 || d.Attempts != 3 || *d.Credits != 1 || d.Replayed {
		t.Fatalf("vendor asked %d times, %d attempts, credits %d", len(at), d.Attempts, *d.Credits)
	}
	if gap := at[1].Sub(at[0]); gap < time.Second {
		t.Errorf("Retry-After: 1 not honoured: the next attempt came after %v", gap)
	}
	if at[2].Before(notBefore) {
		t.Errorf("Retry-After date %v not honoured: the next attempt came at %v", notBefore, at[2])
	}
	rows := attemptRows(h, acct)
	if len(rows) != 3 || !strings.HasSuffix(rows[0], "failed 0") || !strings.HasSuffix(rows[1], "failed 0") || !strings.HasSuffix(rows[2], "succeeded 1") {
		t.Fatalf("ledger attempts %q", rows)
	}
	if keyOf(rows[0]) == keyOf(rows[1]) || keyOf(rows[1]) == keyOf(rows[2]) || keyOf(rows[2]) != d.IdempotencyKey {
		t.Fatalf("a refunded attempt's key was reused or the last is not the answer's: %q", rows)
	}
	checkCharged(t, h, acct, 10, 1)
}

func keyOf(row string) string { return strings.Fields(row)[1] }

// A Retry-After that would end past the caller's deadline is not waited
// out: Decide returns at once with the delay the gateway asked for.
func TestRetryAfterBeyondDeadlineReturnsAtOnce(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	v.answerWith(func(_ int, w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := newClient(t, h.URL, key).Decide(ctx, apple)
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "provider_busy" || e.RetryAfter != time.Hour || e.Attempts != 1 || e.Uncertain || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v (%+v)", err, e)
	}
	if ctx.Err() != nil {
		t.Fatal("Decide waited until the deadline instead of returning")
	}
	checkCharged(t, h, acct, 10, 0)
}

// Errors are classified by X-Service-Error-Code and -Source, never by the
// body: an upstream 400 whose text says "provider_busy" is a request the
// upstream refused, returned at once; so are the caller's own mistakes.
func TestErrorsClassifiedByHeadersAndNotRetriedWhenFixable(t *testing.T) {
	h, v := startHost(t, nil)
	acct, key := h.NewAccount(email(), 10)
	v.answerWith(func(_ int, w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"code":"provider_busy","type":"overloaded","message":"retry now, request_in_progress"}}`)
	})
	_, poor := h.NewAccount(email(), 0)
	for _, c := range []struct {
		name, key  string
		req        any
		status     int
		code, from string
	}{
		{"upstream refusal", key, apple, 400, "upstream_rejected_request", "upstream"},
		{"insufficient credits", poor, apple, 402, "insufficient_credits", "platform"},
		{"unknown key", "dg_nonsense", apple, 401, "invalid_api_key", "platform"},
		{"invalid body", key, json.RawMessage(`{"state":1,"questions":{}}`), 400, "invalid_state", "platform"},
	} {
		_, err := newClient(t, h.URL, c.key).Decide(context.Background(), c.req)
		var e *client.Error
		if !errors.As(err, &e) || e.Status != c.status || e.Code != c.code || e.Source != c.from || e.Attempts != 1 || e.Uncertain {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if n := len(v.decisions()); n != 1 {
		t.Errorf("the vendor was asked %d times, want once", n)
	}
	checkCharged(t, h, acct, 10, 0)
}

// GET /v1/models: the vendor's list as it sent it, member types it did not
// promise tolerated; nothing charged.
func TestModelsListsTheUpstreamModels(t *testing.T) {
	h, _ := startHost(t, nil)
	acct, key := h.NewAccount(email(), 3)
	models, err := newClient(t, h.URL, key).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 2 || models[0].Name != "model-x" || models[0].ReleaseDate != "2026-09-18" || models[1].Name != "model-y" || models[1].Description != "" ||
		!strings.Contains(string(models[0].Raw), `"context":4096`) {
		t.Fatalf("%+v", models)
	}
	checkCharged(t, h, acct, 3, 0)
}

// A router upstream has no model list: 501, returned at once.
func TestModelsOnRouterIsNotSupported(t *testing.T) {
	h, v := startHost(t, map[string]string{"UPSTREAM_KIND": "router"})
	_, key := h.NewAccount(email(), 3)
	_, err := newClient(t, h.URL, key).Models(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 501 || e.Code != "model_listing_not_supported" || e.Attempts != 1 {
		t.Fatalf("%v", err)
	}
	if len(v.Seen()) != 0 {
		t.Fatal("the router was asked for models")
	}
}

// The base URL carries the version (spec §9.4): one without /v1 is
// refused when the client is made, not by a 404 later.
func TestBaseURLMustIncludeV1(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8787", "http://127.0.0.1:8787/", "http://127.0.0.1:8787/v1/service", "127.0.0.1:8787/v1", "ftp://h/v1",
		// An empty query or fragment would swallow the paths the client
		// appends ("/v1?/service" is /v1 with a query).
		"http://127.0.0.1:8787/v1?", "http://127.0.0.1:8787/v1/?", "http://127.0.0.1:8787/v1#", "http://127.0.0.1:8787/v1?x=1"} {
		if _, err := client.New(base, "k"); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
	for _, base := range []string{"http://127.0.0.1:8787/v1", "https://gw.example.com/v1/", "https://example.com/decisions/v1"} {
		if _, err := client.New(base, "k"); err != nil {
			t.Errorf("New(%q): %v", base, err)
		}
	}
}
