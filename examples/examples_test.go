// Package examples_test runs the README's snippets (curl, Python,
// JavaScript and the Go client), kept here as files README.md shows
// verbatim, against the real gateway.
package examples_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
