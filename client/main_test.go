package client_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain runs bin/gateway serve with a fake vendor for the examples,
// which have no *testing.T, and gives them its URL and a key through the
// environment, as the README's snippets get theirs.
func TestMain(m *testing.M) {
	stop, err := exampleGateway()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func exampleGateway() (stop func(), err error) {
	bin := os.Getenv("GATEWAY_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../bin/gateway")
	}
	functions, _ := filepath.Abs("../build/functions")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%v (run `make build` first)", err)
	}
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		return nil, err
	}
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"models":[{"name":"model-x"},{"name":"model-y"}]}`)
			return
		}
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			w.WriteHeader(400)
			return
		}
		answer(w, body)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	env := append(os.Environ(), "LIBSQL_URL=file:"+filepath.Join(dir, "ledger.db"), "SERVICE_ADDR="+addr,
		"UPSTREAM_KIND=vendor", "UPSTREAM_URL="+vendor.URL+"/v1", "UPSTREAM_API_KEY="+operatorKey,
		"GATEWAY_FUNCTIONS_DIR="+functions, "GATEWAY_DATA_DIR="+dir)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("gateway %v: %v\n%s", args, err, out)
		}
		return string(out), nil
	}
	if _, err := run("admin", "migrate"); err != nil {
		return nil, err
	}
	out, err := run("admin", "key", "example@example.com", "examples") // verified: welcome credits
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	serve := exec.Command(bin, "serve")
	serve.Env = env
	if err := serve.Start(); err != nil {
		return nil, err
	}
	stop = func() { serve.Process.Kill(); serve.Wait(); vendor.Close(); os.RemoveAll(dir) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("gateway serve not ready in 30 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	os.Setenv("DECISION_BASE_URL", "http://"+addr+"/v1")
	os.Setenv("DECISION_API_KEY", lines[len(lines)-1])
	return stop, nil
}
