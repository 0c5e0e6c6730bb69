package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"decisiongateway/wasm-host/app"
	"decisiongateway/wasm-host/hostconfig"
)

// A flood of connections that send nothing, more than the process may
// have files open, does not take the descriptors the host's requests need:
// a decision on a connection accepted before the flood is answered 200 (it
// dials the upstream; the host before the bound answered 502
// upstream_unavailable, its accept loop having taken every descriptor),
// and once the flood ends the host is still ready.
func TestServeKeepsDescriptorsForRequestsUnderAConnectionFlood(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	const files = 200
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 4*files {
		t.Skipf("the open-file limit (%d) leaves no room for the flood and the test's own connections", lim.Max)
	}
	dir := t.TempDir()
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	out, ok := gateway(t, dir, nil, "admin", "key", "flood@example.test")
	if !ok {
		t.Fatalf("admin key:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]

	var serving struct {
		Addr           string
		MaxConnections int `json:"max_connections"`
	}
	serveUntil(t, dir, []string{prlimit, "--nofile=" + strconv.Itoa(files) + ":" + strconv.Itoa(files)}, nil, "serving", &serving, "serve", "--dev")
	if serving.Addr == "" {
		t.Fatal("serve never logged its address")
	}
	if want := hostconfig.ConnectionsFor(files); serving.MaxConnections != want {
		t.Errorf("max_connections %d with %d files, want %d", serving.MaxConnections, files, want)
	}
	addr := strings.TrimPrefix(serving.Addr, "http://")

	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	// Answered on it: the first connection is accepted, and every module
	// is loaded, before the flood.
	readyz(t, first, addr)
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 2 * files {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d of the flood: %v", len(flood)+1, err)
		}
		flood = append(flood, c)
	}
	// The host has had the time to accept what it will: as many as it
	// may, which its metrics say.
	time.Sleep(500 * time.Millisecond)
	req, _ := http.NewRequest("GET", "http://"+addr+app.MetricsPath, nil)
	metrics := roundTrip(t, first, req).Body
	for _, want := range []string{"gateway_connections_open " + strconv.Itoa(serving.MaxConnections) + "\n", "gateway_connections_max " + strconv.Itoa(serving.MaxConnections) + "\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics under the flood lack %q:\n%s", strings.TrimSpace(want), grepLines(metrics, "gateway_connections_"))
		}
	}
	body := `{"state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`
	req, _ = http.NewRequest("POST", "http://"+addr+"/v1/service", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp := roundTrip(t, first, req)
	if resp.StatusCode != 200 {
		t.Errorf("decision under a flood of %d connections: %d %s %s", len(flood), resp.StatusCode, resp.Header.Get("X-Service-Error-Code"), resp.Body)
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	after, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	after.SetDeadline(time.Now().Add(30 * time.Second))
	readyz(t, after, addr)
}

// readyz asks /readyz on conn and fails the test unless every module is
// loaded.
func readyz(t *testing.T, conn net.Conn, addr string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/readyz", nil)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp := roundTrip(t, conn, req)
		if resp.StatusCode == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", resp.StatusCode, resp.Body)
		}
	}
}

type answer struct {
	StatusCode int
	Header     http.Header
	Body       string
}

// roundTrip sends req on conn, a kept-alive connection, and reads its
// answer.
func roundTrip(t *testing.T, conn net.Conn, req *http.Request) answer {
	t.Helper()
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// grepLines is the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
