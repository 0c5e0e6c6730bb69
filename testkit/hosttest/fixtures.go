package hosttest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
)

// Rows runs one statement on the host's ledger and returns its rows,
// failing the test on an SQL error.
func (h *Host) Rows(sql string, args ...abi.Value) [][]abi.Value {
	h.t.Helper()
	res := h.App.Ledger.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: sql, Args: args}}})
	if res.Err != "" {
		h.t.Fatalf("%s: %s", sql, res.Err)
	}
	return res.Steps[0].Rows
}

// Store is the account batches on this host's ledger: tests set up
// accounts through the same code the functions and the admin CLI run.
func (h *Host) Store() *accounts.Store { return accounts.New(h.App.Ledger.Bind(context.Background())) }

// NewAccount creates a verified account holding credits (no welcome
// grant) and returns its id and a live API key.
func (h *Host) NewAccount(email string, credits int64) (account, key string) {
	h.t.Helper()
	s := h.Store()
	a, err := s.EnsureAccount(email)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := s.Verify(a.ID, 0); err != nil {
		h.t.Fatal(err)
	}
	if credits > 0 {
		if _, err := s.Grant(a.ID, credits); err != nil {
			h.t.Fatal(err)
		}
	}
	_, secret, err := s.CreateKey(a.ID, "test")
	if err != nil {
		h.t.Fatal(err)
	}
	return a.ID, secret
}

// Balance returns an account's credit balance.
func (h *Host) Balance(account string) int64 {
	h.t.Helper()
	return h.Rows(`SELECT balance FROM accounts WHERE id = ?`, abi.String(account))[0][0].AsInt()
}

// CheckInvariant fails the test unless every balance equals the sum of its
// credit entries and none is negative (schema/ledger.md).
func (h *Host) CheckInvariant() {
	h.t.Helper()
	for _, r := range h.Rows(`SELECT a.id, a.balance, COALESCE((SELECT SUM(delta) FROM credit_entries c WHERE c.account_id = a.id), 0) FROM accounts a`) {
		if r[1].AsInt() != r[2].AsInt() || r[1].AsInt() < 0 {
			h.t.Errorf("account %s: balance %d, entries sum %d", r[0].AsString(), r[1].AsInt(), r[2].AsInt())
		}
	}
}

// Recorder is a fake of something outside the gateway (a vendor, router,
// binding or mail service): it records every request and answers with a
// handler the test can swap at any time.
type Recorder struct {
	URL    string
	mu     sync.Mutex
	seen   []Seen
	handle func(w http.ResponseWriter, r *http.Request, body []byte)
}

// Seen is one request a Recorder received.
type Seen struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// NewRecorder starts a Recorder answering with handle.
func NewRecorder(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *Recorder {
	rec := &Recorder{handle: handle}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.seen = append(rec.seen, Seen{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		h := rec.handle
		rec.mu.Unlock()
		h(w, r, body)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// Seen returns the requests received so far.
func (rec *Recorder) Seen() []Seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Seen(nil), rec.seen...)
}

// Handle replaces the answering handler.
func (rec *Recorder) Handle(h func(w http.ResponseWriter, r *http.Request, body []byte)) {
	rec.mu.Lock()
	rec.handle = h
	rec.mu.Unlock()
}
