// Package examples_test runs the README's snippets (curl, Python,
// JavaScript and the Go client), kept here as files README.md shows
// verbatim, against the real gateway.
package examples_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// snippets are the README's examples: the file, and the command that runs
// it (with the interpreter it needs first).
var snippets = []struct {
	file string
	run  []string
}{
	{"decide.sh", []string{"sh", "decide.sh"}},
	{"decide.py", []string{"python3", "decide.py"}},
	{"decide.mjs", []string{"node", "decide.mjs"}},
	{"decide/main.go", []string{"go", "run", "./decide"}},
}

// README.md shows every snippet exactly as it is here, so what readers
// copy is what this test runs.
func TestREADMEShowsTheSnippetsVerbatim(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testenv.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snippets {
		b, err := os.ReadFile(s.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "\n"+string(b)+"```\n") {
			t.Errorf("README.md does not show examples/%s verbatim in a code block", s.file)
		}
	}
}

// answerLine is what the Python, JavaScript and Go snippets print.
var answerLine = regexp.MustCompile(`(?m)^fruit: apple credits: 1 request: (\S+)$`)

// Each snippet, run as a reader would against a real gateway, gets an
// answer, is charged one credit under an Idempotency-Key of its own, and
// reads credits and request id from the headers.
func TestSnippetsRunAgainstTheGateway(t *testing.T) {
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		out, _ := json.Marshal(map[string]any{"model": "model-latest", "answers": hosttest.Answers(body)})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	h := hosttest.Start(t, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1", "UPSTREAM_API_KEY": "sk-operator-examples"})
	for _, s := range snippets {
		t.Run(s.file, func(t *testing.T) {
			if _, err := exec.LookPath(s.run[0]); err != nil {
				t.Skipf("%s is not installed on this machine, so examples/%s cannot run", s.run[0], s.file)
			}
			acct, key := h.NewAccount(keys.NewAccountID()+"@examples.test", 5)
			cmd := exec.Command(s.run[0], s.run[1:]...)
			cmd.Env = append(os.Environ(), "DECISION_BASE_URL="+h.URL+"/v1", "DECISION_API_KEY="+key)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", s.run, err, out)
			}
			rows := h.Rows(`SELECT id, idem_key, state, charged FROM requests WHERE account_id = ?`, abi.String(acct))
			if len(rows) != 1 || rows[0][1].AsString() == "" || rows[0][2].AsString() != "succeeded" || rows[0][3].AsInt() != 1 {
				t.Fatalf("ledger attempts %v: want one charged attempt with an Idempotency-Key", rows)
			}
			id := rows[0][0].AsString()
			if s.file == "decide.sh" { // curl prints the headers and the body
				if !strings.Contains(string(out), `"choice":"apple"`) || !strings.Contains(string(out), "X-Service-Credits: 1\r\n") || !strings.Contains(string(out), "X-Request-Id: "+id+"\r\n") {
					t.Fatalf("curl printed:\n%s", out)
				}
			} else if m := answerLine.FindSubmatch(out); m == nil || string(m[1]) != id {
				t.Fatalf("printed:\n%s\nwant the answer, 1 credit and request %s", out, id)
			}
			if b := h.Balance(acct); b != 4 {
				t.Fatalf("balance %d after one decision from 5", b)
			}
			h.CheckInvariant()
		})
	}
}

// The Python and JavaScript snippets resend the same key and body after an
// answer that says wait (503 overloaded: nothing ran) or proves nothing
// (504 function_timeout: the outcome is unknown, spec §7 rule 3), rather
// than giving up on an operation that may succeed or may be charged.
func TestSnippetsResendTheKeyAfterAnAnswerThatProvesNothing(t *testing.T) {
	type sent struct{ key, body string }
	var (
		mu   sync.Mutex
		seen []sent
	)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, sent{r.Header.Get("Idempotency-Key"), string(body)})
		n := len(seen)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fail := func(status int, code string) {
			w.Header().Set("X-Service-Error-Source", "platform")
			w.Header().Set("X-Service-Error-Code", code)
			w.WriteHeader(status)
			w.Write([]byte(`{"error":{"code":"` + code + `","message":"words"}}`))
		}
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			fail(http.StatusServiceUnavailable, "overloaded")
		case 2:
			fail(http.StatusGatewayTimeout, "function_timeout")
		default:
			w.Header().Set("X-Service-Credits", "1")
			w.Header().Set("X-Request-Id", "req-3")
			w.Write([]byte(`{"model":"m","answers":{"fruit":{"type":"choice","choice":"apple","probabilities":{"apple":1,"pear":0},"confidence":1}}}`))
		}
	}))
	defer gw.Close()
	for _, s := range snippets {
		if s.file != "decide.py" && s.file != "decide.mjs" {
			continue
		}
		t.Run(s.file, func(t *testing.T) {
			if _, err := exec.LookPath(s.run[0]); err != nil {
				t.Skipf("%s is not installed on this machine, so examples/%s cannot run", s.run[0], s.file)
			}
			mu.Lock()
			seen = nil
			mu.Unlock()
			cmd := exec.Command(s.run[0], s.run[1:]...)
			cmd.Env = append(os.Environ(), "DECISION_BASE_URL="+gw.URL+"/v1", "DECISION_API_KEY=dgk_test")
			out, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || len(seen) != 3 {
				t.Fatalf("%v: %v after %d requests\n%s", s.run, err, len(seen), out)
			}
			for _, a := range seen[1:] {
				if a.key == "" || a != seen[0] {
					t.Fatalf("attempts sent %q, want one key and body throughout", seen)
				}
			}
			if m := answerLine.FindSubmatch(out); m == nil || string(m[1]) != "req-3" {
				t.Fatalf("printed:\n%s", out)
			}
		})
	}
}
