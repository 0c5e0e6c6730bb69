// Package fleet_test runs several wazero hosts (real modules, one real
// sqld) as one service: what one host does, every other host sees.
package fleet_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

const upstreamKey = "sk-operator-fleet-5d1e"

const decision = `{"state":"a ripe red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

func answerValid(w http.ResponseWriter, body []byte) {
	out, _ := json.Marshal(map[string]any{"model": "vendor-1", "answers": hosttest.Answers(body), "usage": map[string]int{"input_tokens": 3, "output_tokens": 2}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// fleet runs n hosts on one fresh sqld in front of vendor, with env added.
func fleet(t *testing.T, n int, vendor *hosttest.Recorder, env ...string) []*hosttest.Host {
	url := sqldtest.Start(t)
	var hs []*hosttest.Host
	for i := 0; i < n; i++ {
		e := map[string]string{"LIBSQL_URL": url, "UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1", "UPSTREAM_API_KEY": upstreamKey}
		for j := 0; j+1 < len(env); j += 2 {
			e[env[j]] = env[j+1]
		}
		hs = append(hs, hosttest.Start(t, e))
	}
	return hs
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (r reply) code() string { return r.header.Get("X-Service-Error-Code") }

func decide(t *testing.T, h *hosttest.Host, key string, headers ...string) reply {
	req, _ := http.NewRequest("POST", h.URL+"/v1/service", strings.NewReader(decision))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// TestSuccessAnotherHostReconciledIsNotDelivered: host A's decision waits
// on its upstream while host B, whose clock runs a minute ahead (or A was
// paused past its lease), reconciles A's attempt as failed and refunded.
// When the upstream then answers, the ledger holds no success: A must not
// deliver one (it would be free, and a resend of its key would contradict
// it with 409 idempotency_failed), but answer 503
// request_reconciliation_pending as for any outcome it could not record
// (README, "A client that hangs up …").
func TestSuccessAnotherHostReconciledIsNotDelivered(t *testing.T) {
	gate := make(chan struct{})
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) { <-gate; answerValid(w, body) })
	hs := fleet(t, 2, vendor)
	acct, key := hs[0].NewAccount("late@fleet.test", 10)
	// Without a key first: a key this host has not seen allowed yet
	// reserves before its upstream call (a decision that speculates holds
	// no lease to reconcile: schema/ledger.md, "Speculative decisions").
	for _, idem := range []string{"", "late"} {
		var headers []string
		if idem != "" {
			headers = []string{"Idempotency-Key", idem}
		}
		calls := len(vendor.Seen())
		done := make(chan reply)
		go func() { done <- decide(t, hs[0], key, headers...) }()
		testenv.WaitFor(t, func() bool { return len(vendor.Seen()) == calls+1 })
		if n, err := hs[1].App.Sweep(context.Background(), time.Now().Add(time.Hour)); n != 1 || err != nil {
			close(gate) // the waiting upstream call ends, and with it the test
			t.Fatalf("key %q: host B reconciled %d (%v)", idem, n, err)
		}
		gate <- struct{}{}
		r := <-done
		if r.status != 503 || r.code() != "request_reconciliation_pending" {
			t.Errorf("key %q: a success the ledger refunded was answered %d %q %s", idem, r.status, r.code(), r.body)
		}
		if _, present := r.header["X-Service-Credits"]; present {
			t.Errorf("key %q: X-Service-Credits %q on an answer withheld", idem, r.header.Get("X-Service-Credits"))
		}
		if idem != "" {
			if again := decide(t, hs[1], key, headers...); again.status != 409 || again.code() != "idempotency_failed" {
				t.Errorf("resend on host B: %d %q %s", again.status, again.code(), again.body)
			}
		}
	}
	close(gate)
	if b := hs[1].Balance(acct); b != 10 {
		t.Errorf("balance %d, want 10 (both attempts refunded)", b)
	}
	hs[1].CheckInvariant()
}
