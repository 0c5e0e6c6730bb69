package main

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/wasm-host/hostconfig"
)

// The operator commands against the ledger of a real gateway that served
// decisions (one charged, one refunded), embedded and on sqld: listing,
// one account's money and keys without a secret, a grant that keeps
// balance = Σ entries, a revocation the gateway honours at once, and the
// usage export in both formats with its documented columns.
func TestOperatorCommandsOnARealLedger(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			var fail atomic.Bool
			vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
				if fail.Load() {
					w.WriteHeader(500)
					return
				}
				out, _ := json.Marshal(map[string]any{"model": "vendor-1", "answers": hosttest.Answers(body)})
				w.Header().Set("Content-Type", "application/json")
				w.Write(out)
			})
			h := hosttest.Start(t, map[string]string{"LIBSQL_URL": b.URL, "UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1"})
			cfg, err := hostconfig.From(func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			admin := func(args ...string) string {
				t.Helper()
				out, err := adminTry(cfg, h.App.Ledger, args...)
				if err != nil {
					t.Fatalf("admin %v: %v\n%s", args, err, out)
				}
				return out
			}
			acct, secret := h.NewAccount("ops@example.com", 40)
			h.NewAccount("other@example.com", 5)
			decide := func() (int, string) {
				req, _ := http.NewRequest("POST", h.URL+"/v1/service", strings.NewReader(`{"state":"s","questions":{"q":{"type":"choice","criteria":{"a":"A","b":"B"}}}}`))
				req.Header.Set("Authorization", "Bearer "+secret)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode, resp.Header.Get("X-Service-Credits")
			}
			if status, credits := decide(); status != 200 || credits != "1" {
				t.Fatalf("decision: %d, credits %q", status, credits)
			}
			fail.Store(true)
			if status, credits := decide(); status < 500 || credits != "0" {
				t.Fatalf("failed decision: %d, credits %q", status, credits)
			}

			var listed []accountRow
			for _, l := range strings.Split(strings.TrimSpace(admin("accounts", "--json")), "\n") {
				var r accountRow
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("accounts --json line %q: %v", l, err)
				}
				listed = append(listed, r)
			}
			byEmail := map[string]accountRow{}
			for _, r := range listed {
				byEmail[r.Email] = r
			}
			if mine := byEmail["ops@example.com"]; len(listed) != 2 || mine.ID != acct || mine.Balance != 39 || mine.ActiveKeys != 1 || byEmail["other@example.com"].Balance != 5 {
				t.Errorf("accounts: %+v", listed)
			}
			if text := admin("accounts"); !strings.Contains(text, acct) || !strings.HasPrefix(text, "ACCOUNT") {
				t.Errorf("accounts table:\n%s", text)
			}

			grant := admin("credits", acct, "7")
			var v accountView
			if err := json.Unmarshal([]byte(admin("account", "ops@example.com", "--json")), &v); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(grant, "balance: 46") || v.Balance != 46 || v.EntriesSum != 46 ||
				v.Entries["grant"] != 47 || v.Entries["reserve"] != -2 || v.Entries["refund"] != 1 || len(v.Keys) != 1 || v.Keys[0].State != "active" {
				t.Errorf("after a grant of 7: %q; account %+v", grant, v)
			}
			if n := h.Rows(`SELECT COUNT(*) FROM credit_entries WHERE account_id = ? AND kind = 'grant' AND delta = 7`, abi.String(acct))[0][0].AsInt(); n != 1 {
				t.Errorf("%d grant entries of 7", n)
			}
			h.CheckInvariant()
			text := admin("account", acct)
			if strings.Contains(text, secret) || strings.Contains(text, secret[len(v.Keys[0].Prefix):]) || !strings.Contains(text, v.Keys[0].Prefix) {
				t.Errorf("account shows the secret, or not the prefix:\n%s", text)
			}

			if out := admin("revoke", v.Keys[0].ID); !strings.Contains(out, "revoked key "+v.Keys[0].ID) {
				t.Errorf("revoke: %q", out)
			}
			if status, _ := decide(); status != 401 {
				t.Errorf("a decision with the revoked key: %d", status)
			}
			if out := admin("revoke", v.Keys[0].ID); !strings.Contains(out, "already revoked") {
				t.Errorf("second revoke: %q", out)
			}
			if _, err := adminTry(cfg, h.App.Ledger, "revoke", "key_nosuch"); err == nil {
				t.Error("revoking an unknown key succeeded")
			}

			// One row a page: the export pages through the ledger.
			page := usagePage
			usagePage = 1
			rows, err := csv.NewReader(strings.NewReader(admin("usage"))).ReadAll()
			usagePage = page
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, name := range rows[0] {
				col[name] = i
			}
			if strings.Join(rows[0], ",") != strings.Join(usageColumns, ",") || len(rows) != 3 {
				t.Fatalf("usage CSV:\n%v", rows)
			}
			for i, want := range []struct{ state, charged string }{{"succeeded", "1"}, {"failed", "0"}} {
				r := rows[i+1]
				if r[col["state"]] != want.state || r[col["charged"]] != want.charged || r[col["cost"]] != "1" ||
					r[col["account_id"]] != acct || r[col["key_prefix"]] != v.Keys[0].Prefix || r[col["email"]] != "ops@example.com" {
					t.Errorf("usage row %d: %v", i+1, r)
				}
			}
			// The model the answer named; none for the failure.
			if rows[1][col["resolved_model"]] == "" || rows[2][col["resolved_model"]] != "" {
				t.Errorf("usage resolved_model: %q, %q", rows[1][col["resolved_model"]], rows[2][col["resolved_model"]])
			}
			var lines []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(admin("usage", "--format", "jsonl", "--account", "ops@example.com", "--since", "2000-01-01")), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, m)
			}
			if len(lines) != 2 || lines[0]["request_id"] != rows[1][col["request_id"]] || lines[1]["charged"] != 0.0 || lines[1]["resolved_model"] != nil || len(lines[0]) != len(usageColumns) {
				t.Errorf("usage JSON lines: %v", lines)
			}
			for _, args := range [][]string{{"usage", "--account", "other@example.com"}, {"usage", "--until", "2000-01-01"}} {
				if out := admin(args...); strings.Count(out, "\n") != 1 {
					t.Errorf("%v: want the header alone:\n%s", args, out)
				}
			}
		})
	}
}
