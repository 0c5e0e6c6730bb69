package sqldtest

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartServesHealth(t *testing.T) {
	url := Start(t)
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health: %s", resp.Status)
	}
}

func TestTwoServersAreIndependent(t *testing.T) {
	if a, b := Start(t), Start(t); a == b {
		t.Fatalf("both servers at %s", a)
	}
}

func TestBinaryNamesTheInstaller(t *testing.T) {
	t.Setenv("SQLD_BIN", "")
	t.Setenv("DG_CACHE", t.TempDir())
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "scripts/install-sqld.sh") {
		t.Errorf("missing binary: %v", err)
	}
	t.Setenv("SQLD_BIN", filepath.Join(t.TempDir(), "nope"))
	if _, err := Binary(); err == nil {
		t.Error("SQLD_BIN naming a missing file was accepted")
	}
	exe := filepath.Join(t.TempDir(), "sqld")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SQLD_BIN", exe)
	if got, err := Binary(); err != nil || got != exe {
		t.Errorf("SQLD_BIN: got %q, %v", got, err)
	}
}

// If the chosen port is already served by something that answers /health,
// launch must notice that its own sqld could not bind, not report success.
func TestStartRefusesSomeoneElsesPort(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	defer srv.Close()
	if s, err := launch(bin, t.TempDir(), l.Addr().(*net.TCPAddr).Port); err == nil {
		s.Stop()
		t.Fatalf("launch claimed %s, a port another server holds", s.URL)
	}
}

// TestRestartKeepsTheDatabase: a killed and restarted sqld serves the same
// data on the same URL.
func TestRestartKeepsTheDatabase(t *testing.T) {
	s := StartServer(t)
	post := func(sql string) (string, error) {
		body := `{"requests":[{"type":"execute","stmt":{"sql":"` + sql + `"}},{"type":"close"}]}`
		resp, err := http.Post(s.URL+"/v2/pipeline", "application/json", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if _, err := post("CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := post("INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if _, err := post("SELECT 1"); err == nil {
		t.Fatal("sqld answered after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	out, err := post("SELECT x FROM t")
	if err != nil || !strings.Contains(out, `"value":"42"`) {
		t.Fatalf("after restart: %v %s", err, out)
	}
}
