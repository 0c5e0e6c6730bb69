package decide_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"decisiongateway/shared/canon"
	"decisiongateway/testkit/testenv"
)

func TestReplayReturnsRetainedAnswerWithoutNewInference(t *testing.T) {
	backends(t, func(t *testing.T, ledger string) {
		g := startGateway(t, ledger, nil)
		acct, key := g.NewAccount(randomEmail(), 10)
		first := g.post(key, simpleRequest, "Idempotency-Key", "op-1")
		// Same canonical request: other key order, whitespace and escapes.
		same := `{ "questions":{"fruit":{"criteria":{"pear":"a pear","apple":"an \u0061pple"},"type":"choice"}}, "state":"a red apple", "model":"model-x" }`
		again := g.post(key, same, "Idempotency-Key", "op-1")
		if again.Status != first.Status || string(again.Body) != string(first.Body) {
			t.Fatalf("replay %d %s", again.Status, again.Body)
		}
		for h, want := range map[string]string{
			"X-Idempotency-Replayed":  "true",
			"X-Service-Credits":       "0",
			"X-Request-Id":            first.Header.Get("X-Request-Id"),
			"X-Service-Response-Mode": "vendor-native",
			"X-Upstream-Request-Id":   "vrid-1",
			"Content-Type":            first.Header.Get("Content-Type"),
		} {
			if again.Header.Get(h) != want {
				t.Errorf("%s = %q, want %q", h, again.Header.Get(h), want)
			}
		}
		if n := len(g.vendor.Seen()); n != 1 {
			t.Errorf("upstream calls %d", n)
		}
		if g.Balance(acct) != 9 {
			t.Errorf("balance %d", g.Balance(acct))
		}
	})
}

func TestDifferentCanonicalRequestConflicts(t *testing.T) {
	g := startGateway(t, "", nil)
	_, key := g.NewAccount(randomEmail(), 10)
	g.post(key, simpleRequest, "Idempotency-Key", "op")
	variants := map[string]string{
		"model":         strings.Replace(simpleRequest, "model-x", "model-y", 1),
		"number value":  `{"model":"model-x","state":[0.1000000000000000055511151231257827],"questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`,
		"default model": strings.Replace(simpleRequest, `"model":"model-x",`, "", 1),
	}
	for name, body := range variants {
		if r := g.post(key, body, "Idempotency-Key", "op"); r.Status != 409 || r.code() != "idempotency_conflict" {
			t.Errorf("%s: %d %q", name, r.Status, r.code())
		}
	}
	// Rubric order matters for score questions.
	g.post(key, `{"state":null,"questions":{"s":{"type":"score","criteria":["low","high"]}}}`, "Idempotency-Key", "rubric")
	if r := g.post(key, `{"state":null,"questions":{"s":{"type":"score","criteria":["high","low"]}}}`, "Idempotency-Key", "rubric"); r.code() != "idempotency_conflict" {
		t.Errorf("rubric order: %d %q", r.Status, r.code())
	}
	// Numbers compare by exact value: 1e2 equals 100.
	g.post(key, `{"state":[100],"questions":{"q":{"type":"noul"}}}`, "Idempotency-Key", "num")
	if r := g.post(key, `{"state":[1e2],"questions":{"q":{"type":"noul"}}}`, "Idempotency-Key", "num"); r.Header.Get("X-Idempotency-Replayed") != "true" {
		t.Errorf("1e2 vs 100: %d %q", r.Status, r.code())
	}
}

// An Idempotency-Key sent twice is refused before anything is charged,
// also twice the same: taking one of them would make a resend whose fields
// came in another order a second billed operation, and the Workers runtime
// joins them into one value that is no valid key.
func TestIdempotencyKeySentTwiceIsRefused(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	for _, keys := range [][]string{{"op-a", "op-b"}, {"op-b", "op-a"}, {"op-a", "op-a"}} {
		req, _ := http.NewRequest("POST", g.URL+"/v1/service", strings.NewReader(simpleRequest))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 || resp.Header.Get("X-Service-Error-Code") != "invalid_idempotency_key" || resp.Header.Get("X-Service-Credits") != "0" {
			t.Errorf("keys %q: %d %q credits %q", keys, resp.StatusCode, resp.Header.Get("X-Service-Error-Code"), resp.Header.Get("X-Service-Credits"))
		}
	}
	if n := len(g.vendor.Seen()); n != 0 || g.Balance(acct) != 10 {
		t.Fatalf("upstream called %d times, balance %d: want none and 10", n, g.Balance(acct))
	}
	// Either key alone is still unused.
	if r := g.post(key, simpleRequest, "Idempotency-Key", "op-b"); r.Status != 200 || r.Header.Get("X-Idempotency-Replayed") != "" {
		t.Fatalf("op-b alone: %d replayed %q", r.Status, r.Header.Get("X-Idempotency-Replayed"))
	}
	g.CheckInvariant()
}

func TestPendingKeyAnswersInProgress(t *testing.T) {
	g := startGateway(t, "", nil)
	_, key := g.NewAccount(randomEmail(), 10)
	gate := make(chan struct{})
	g.vendor.Handle(gated(gate))
	done := make(chan reply)
	go func() { done <- g.post(key, simpleRequest, "Idempotency-Key", "slow") }()
	testenv.WaitFor(t, func() bool { return len(g.vendor.Seen()) == 1 })
	r := g.post(key, simpleRequest, "Idempotency-Key", "slow")
	if r.Status != 409 || r.code() != "request_in_progress" || r.Header.Get("Retry-After") == "" {
		t.Errorf("%d %q Retry-After %q", r.Status, r.code(), r.Header.Get("Retry-After"))
	}
	close(gate)
	if first := <-done; first.Status != 200 {
		t.Fatalf("first %d", first.Status)
	}
}

// A retention shorter than a request may run does not let a second request
// take over a key whose attempt is still pending: it answers 409
// request_in_progress, and the upstream is called and the account charged
// once. Settled, the record keeps the configured retention.
func TestPendingKeyOutlivesAShortRetention(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_IDEMPOTENCY_TTL": "1s"})
	acct, key := g.NewAccount(randomEmail(), 10)
	gate := make(chan struct{})
	g.vendor.Handle(gated(gate))
	done := make(chan reply)
	go func() { done <- g.post(key, simpleRequest, "Idempotency-Key", "long") }()
	testenv.WaitFor(t, func() bool { return len(g.vendor.Seen()) == 1 })
	time.Sleep(1500 * time.Millisecond) // past the retention, the attempt still pending
	r := g.post(key, simpleRequest, "Idempotency-Key", "long")
	if r.Status != 409 || r.code() != "request_in_progress" {
		t.Errorf("the same key while pending, past the retention: %d %q %s", r.Status, r.code(), r.Body)
	}
	close(gate)
	if first := <-done; first.Status != 200 || first.Header.Get("X-Service-Credits") != "1" {
		t.Fatalf("first %d credits %q", first.Status, first.Header.Get("X-Service-Credits"))
	}
	if n := len(g.vendor.Seen()); n != 1 || g.Balance(acct) != 9 {
		t.Fatalf("upstream called %d times, balance %d: want once and 9", n, g.Balance(acct))
	}
	rows := g.Rows(`SELECT expires_at - created_at FROM idempotency WHERE key = 'long'`)
	if len(rows) != 1 || rows[0][0].AsInt() != 2 {
		t.Fatalf("retention after settling: %v, want 2 s (1 s from a creation within the second created_at names)", rows)
	}
	g.CheckInvariant()
}

func TestExpiredKeyStartsNewBilledOperation(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_IDEMPOTENCY_TTL": "1s"})
	acct, key := g.NewAccount(randomEmail(), 10)
	g.post(key, simpleRequest, "Idempotency-Key", "short")
	time.Sleep(2100 * time.Millisecond)
	r := g.post(key, simpleRequest, "Idempotency-Key", "short")
	if r.Status != 200 || r.Header.Get("X-Idempotency-Replayed") != "" || r.Header.Get("X-Service-Credits") != "1" {
		t.Fatalf("%d replayed %q credits %q", r.Status, r.Header.Get("X-Idempotency-Replayed"), r.Header.Get("X-Service-Credits"))
	}
	if g.Balance(acct) != 8 || len(g.vendor.Seen()) != 2 {
		t.Fatalf("balance %d, calls %d", g.Balance(acct), len(g.vendor.Seen()))
	}
}

// A retention is kept whole: the ledger counts whole seconds, and a
// record is live for at least SERVICE_IDEMPOTENCY_TTL after its attempt
// began, also under a second, so a resend at once is a replay, never a
// second charge. (Truncated to whole seconds, 500ms kept no record at all.)
func TestRetentionIsNeverShortenedToWholeSeconds(t *testing.T) {
	for _, ttl := range []string{"500ms", "1500ms"} {
		t.Run(ttl, func(t *testing.T) {
			g := startGateway(t, "", map[string]string{"SERVICE_IDEMPOTENCY_TTL": ttl})
			acct, key := g.NewAccount(randomEmail(), 10)
			d, _ := time.ParseDuration(ttl)
			g.post(key, simpleRequest) // warm: the first decision of a host starts its instances
			began := time.Now()
			g.post(key, simpleRequest, "Idempotency-Key", "ok")
			r := g.post(key, simpleRequest, "Idempotency-Key", "ok")
			if since := time.Since(began); since >= d {
				t.Logf("the resend came %s after the first began, past the retention: its answer is not checked", since)
			} else if r.Header.Get("X-Idempotency-Replayed") != "true" || len(g.vendor.Seen()) != 2 || g.Balance(acct) != 8 {
				t.Errorf("resend within the retention: %d replayed %q credits %q; upstream called %d times, balance %d: want a replay, 2 and 8",
					r.Status, r.Header.Get("X-Idempotency-Replayed"), r.Header.Get("X-Service-Credits"), len(g.vendor.Seen()), g.Balance(acct))
			}
			g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.WriteHeader(500)
				w.Write([]byte(`{"error":{}}`))
			})
			g.post(key, simpleRequest, "Idempotency-Key", "failed")
			for _, row := range g.Rows(`SELECT key, state, expires_at - created_at FROM idempotency`) {
				// created_at is the second the attempt began in, and a
				// record is live while expires_at is after the current
				// second: live for d after its start needs more than d.
				if float64(row[2].AsInt()) <= d.Seconds() {
					t.Errorf("%s record (%s) kept %d s from its created_at, not more than %s", row[0].AsString(), row[1].AsString(), row[2].AsInt(), ttl)
				}
			}
			g.CheckInvariant()
		})
	}
}

func TestConcurrentSameKeyMakesOneUpstreamCallAndOneCharge(t *testing.T) {
	backends(t, func(t *testing.T, ledger string) {
		g := startGateway(t, ledger, nil)
		acct, key := g.NewAccount(randomEmail(), 100)
		var wg sync.WaitGroup
		replies := make([]reply, 20)
		for i := range replies {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				replies[i] = g.post(key, simpleRequest, "Idempotency-Key", "hammer")
			}(i)
		}
		wg.Wait()
		ok, charged := 0, 0
		for _, r := range replies {
			switch {
			case r.Status == 200:
				ok++
				if r.Header.Get("X-Service-Credits") == "1" {
					charged++
				}
			case r.Status == 409 && r.code() == "request_in_progress":
			default:
				t.Errorf("unexpected %d %q %s", r.Status, r.code(), r.Body)
			}
		}
		if n := len(g.vendor.Seen()); n != 1 || charged != 1 || ok < 1 {
			t.Fatalf("upstream calls %d, charged %d, ok %d", n, charged, ok)
		}
		if g.Balance(acct) != 99 {
			t.Fatalf("balance %d", g.Balance(acct))
		}
		g.CheckInvariant()
	})
}

// TestUnsettledDecisionIsNotDeliveredAndReconciles: when the outcome cannot
// be recorded before the request's time runs out, the answer is withheld (a
// success the ledger does not hold would be refunded later, and a resend
// would contradict it): 503 request_reconciliation_pending without
// X-Service-Credits, and the attempt ends failed and refunded.
func TestUnsettledDecisionIsNotDeliveredAndReconciles(t *testing.T) {
	g := startGateway(t, "", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "2s"})
	acct, key := g.NewAccount(randomEmail(), 10)
	// The ledger refuses to settle once the upstream has answered.
	g.vendor.Handle(func(w http.ResponseWriter, r *http.Request, body []byte) {
		g.exec(`CREATE TRIGGER no_settle BEFORE UPDATE OF state ON requests WHEN NEW.state <> 'pending' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
		answerValid(w, body)
	})
	r := g.post(key, simpleRequest, "Idempotency-Key", "lost")
	if r.Status != 503 || r.code() != "request_reconciliation_pending" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d %q %s", r.Status, r.code(), r.Body)
	}
	if _, present := r.Header["X-Service-Credits"]; present {
		t.Fatalf("X-Service-Credits %q present although the charge was not settled", r.Header.Get("X-Service-Credits"))
	}
	g.exec(`DROP TRIGGER no_settle`)
	g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, body []byte) { answerValid(w, body) })
	next := g.post(key, simpleRequest)
	if next.Status != 503 || next.code() != "request_reconciliation_pending" {
		t.Fatalf("next: %d %q", next.Status, next.code())
	}
	if after := g.post(key, simpleRequest); after.Status != 200 {
		t.Fatalf("after reconciliation: %d %s", after.Status, after.Body)
	}
	// The unsettled attempt was refunded and its key failed.
	if g.Balance(acct) != 9 {
		t.Errorf("balance %d", g.Balance(acct))
	}
	if r := g.post(key, simpleRequest, "Idempotency-Key", "lost"); r.code() != "idempotency_failed" {
		t.Errorf("key after reconciliation: %d %q", r.Status, r.code())
	}
	g.CheckInvariant()
}

// TestKilledHostLeavesNoKeyPendingAndNoCreditLost runs the real binary,
// kills it (SIGKILL) while its upstream call is in flight, and checks that
// the pending attempt is settled — failed and refunded — once its lease ends.
func TestKilledHostLeavesNoKeyPendingAndNoCreditLost(t *testing.T) {
	g := startGateway(t, "", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "1s"})
	ledgerURL := g.App.Config.LedgerURL
	acct, key := g.NewAccount(randomEmail(), 10)
	gate := make(chan struct{})
	g.vendor.Handle(gated(gate)) // never answers while the host lives
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(testenv.Binary(t), "serve")
	cmd.Env = append(os.Environ(), "SERVICE_ADDR="+addr, "LIBSQL_URL="+ledgerURL, "UPSTREAM_KIND=vendor",
		"UPSTREAM_URL="+g.vendor.URL+"/v1", "UPSTREAM_API_KEY="+operatorKey, "GATEWAY_REQUEST_TIMEOUT=1s",
		"GATEWAY_FUNCTIONS_DIR="+filepath.Join(testenv.Root(t), "build", "functions"), "GATEWAY_DATA_DIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + "/api/service/config")
		return err == nil && resp.StatusCode == 200
	})
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/service", strings.NewReader(simpleRequest))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", "doomed")
		http.DefaultClient.Do(req)
	}()
	testenv.WaitFor(t, func() bool { return len(g.vendor.Seen()) == 1 })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	close(gate)
	if g.Balance(acct) != 9 {
		t.Fatalf("reservation not held while pending: balance %d", g.Balance(acct))
	}
	// Within the lease the attempt is presumed alive and the sweeper leaves it.
	if n, err := g.App.Sweep(context.Background(), time.Now()); err != nil || n != 0 {
		t.Fatalf("sweep within the lease settled %d (%v)", n, err)
	}
	if r := g.post(key, simpleRequest, "Idempotency-Key", "doomed"); r.code() != "request_in_progress" {
		t.Fatalf("within lease: %d %q", r.Status, r.code())
	}
	time.Sleep(7500 * time.Millisecond) // lease = 1s deadline + 5s, in whole seconds
	if r := g.post(key, simpleRequest, "Idempotency-Key", "doomed"); r.code() != "request_reconciliation_pending" {
		t.Fatalf("after lease: %d %q %s", r.Status, r.code(), r.Body)
	}
	if r := g.post(key, simpleRequest, "Idempotency-Key", "doomed"); r.code() != "idempotency_failed" {
		t.Fatalf("key: %d %q", r.Status, r.code())
	}
	if g.Balance(acct) != 10 {
		t.Fatalf("credit lost: balance %d", g.Balance(acct))
	}
	pending := g.exec(`SELECT COUNT(*) FROM requests WHERE state = 'pending'`)[0][0].AsInt()
	if pending != 0 {
		t.Fatalf("%d attempts still pending", pending)
	}
	g.CheckInvariant()
}

func TestSweeperSettlesExpiredLeases(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, _ := g.NewAccount(randomEmail(), 10)
	// An attempt whose host vanished: reserved, pending, lease over.
	g.exec(`UPDATE accounts SET balance = balance - 3 WHERE id = ?`, str(acct))
	g.exec(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES (?, -3, 'reserve', 'r-gone', 0)`, str(acct))
	g.exec(`INSERT INTO requests (id, account_id, source, model, questions, cost, state, idem_key, lease_until, created_at)
VALUES ('r-gone', ?, 'api', 'm', 3, 3, 'pending', 'k-gone', 5, 0)`, str(acct))
	g.exec(`INSERT INTO idempotency (account_id, key, fingerprint, state, request_id, created_at, expires_at)
VALUES (?, 'k-gone', 'f', 'pending', 'r-gone', 0, 99999999999)`, str(acct))
	n, err := g.App.Sweep(context.Background(), time.Now())
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if g.Balance(acct) != 10 {
		t.Errorf("balance %d", g.Balance(acct))
	}
	state := g.exec(`SELECT state FROM idempotency WHERE key = 'k-gone'`)[0][0].AsString()
	if state != "failed" {
		t.Errorf("idempotency state %q", state)
	}
	if n, _ := g.App.Sweep(context.Background(), time.Now()); n != 0 {
		t.Errorf("second sweep settled %d again", n)
	}
	g.CheckInvariant()
}

// The idempotency record's fingerprint is the SHA-256 of the canonical
// request, whoever computes it: the wazero host hashes for the module
// (schema/abi.md, `sha256`), and a record written that way must match one
// the module would have written itself, or a resend after an upgrade or on
// Workers would be refused as a conflict.
func TestFingerprintIsTheCanonicalRequestsSHA256(t *testing.T) {
	g := startGateway(t, "", nil)
	_, key := g.NewAccount(randomEmail(), 10)
	if r := g.post(key, simpleRequest, "Idempotency-Key", "fp"); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	canonical, err := canon.Append(nil, []byte(simpleRequest), "model-x")
	if err != nil {
		t.Fatal(err)
	}
	got := g.exec(`SELECT fingerprint FROM idempotency WHERE key = 'fp'`)[0][0].AsString()
	if want := canon.Fingerprint(canonical); got != want {
		t.Errorf("fingerprint %s, want %s", got, want)
	}
}
