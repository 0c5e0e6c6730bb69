package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"decisiongateway/client"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// imageConfig is what `podman image inspect` says of the image's runtime
// settings.
type imageConfig struct {
	User       string
	Env        []string
	Entrypoint []string
	Cmd        []string
	Volumes    map[string]struct{}
	WorkingDir string
}

// The Containerfile builds offline (FROM scratch) into an image holding a
// static gateway and every function module, running as a non-root user
// with /data, which it owns, as a volume for the ledger; and that image's
// gateway serves decisions.
func TestContainerfileBuildsAServingImage(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (Debian: apt-get install podman), so the Containerfile is not built here")
	}
	root := testenv.Root(t)
	podmanDo := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(podman, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	ctxDir := filepath.Join(t.TempDir(), "context")
	if out, err := exec.Command("bash", filepath.Join(root, "scripts", "container-context.sh"), ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("container-context.sh: %v\n%s", err, out)
	}
	tag := "localhost/decision-gateway-test:" + strings.ToLower(keys.NewAccountID())
	podmanDo("build", "--pull=never", "-q", "-f", filepath.Join(root, "Containerfile"), "-t", tag, ctxDir)
	t.Cleanup(func() { exec.Command(podman, "rmi", "-f", tag).Run() })

	var cfg []struct{ Config imageConfig }
	if err := json.Unmarshal([]byte(podmanDo("image", "inspect", tag)), &cfg); err != nil || len(cfg) != 1 {
		t.Fatalf("inspect: %v", err)
	}
	c := cfg[0].Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/gateway" || strings.Join(c.Cmd, " ") != "serve" || c.WorkingDir != "/data" {
		t.Errorf("image runs %v %v as %q in %q", c.Entrypoint, c.Cmd, c.User, c.WorkingDir)
	}
	if _, ok := c.Volumes["/data"]; !ok || !slices.Contains(c.Env, "LIBSQL_URL=file:/data/ledger.db") || !slices.Contains(c.Env, "GATEWAY_FUNCTIONS_DIR=/functions") {
		t.Errorf("volumes %v, env %v: the ledger is not on the volume", c.Volumes, c.Env)
	}

	// The image's files, read where podman keeps them.
	fs := podmanDo("image", "mount", tag)
	t.Cleanup(func() { exec.Command(podman, "image", "unmount", tag).Run() })
	checkStatic(t, filepath.Join(fs, "gateway"))
	mods, _ := filepath.Glob(filepath.Join(root, "build", "functions", "*.wasm"))
	for _, m := range mods {
		want, _ := os.ReadFile(m)
		got, err := os.ReadFile(filepath.Join(fs, "functions", filepath.Base(m)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("image /functions/%s differs from build/functions (%v)", filepath.Base(m), err)
		}
	}
	if st, err := os.Stat(filepath.Join(fs, "data")); err != nil || !st.IsDir() || st.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("/data: %v %+v, want a directory owned by 65532", err, st)
	}
	if _, err := os.Stat(filepath.Join(fs, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		t.Errorf("no CA bundle for https upstreams: %v", err)
	}

	// The image's gateway and modules, with the image's settings but for
	// the paths: migrate, a key, serve, a decision through the client.
	// Containers cannot start on every machine podman builds on (a sandbox
	// may refuse crun's setrlimit); the files are the same either way.
	if out, err := exec.Command(podman, "run", "--rm", "--network", "none", tag, "routes").CombinedOutput(); err != nil {
		t.Logf("podman cannot start containers here (%v: %s); running the image's /gateway directly", err, bytes.TrimSpace(out))
	} else if !json.Valid(out) {
		t.Errorf("gateway routes in a container printed %s", out)
	}
	data := t.TempDir()
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		out, _ := json.Marshal(map[string]any{"model": "model-latest", "answers": hosttest.Answers(body)})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	addr := testenv.FreeAddr(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "UPSTREAM_KIND=vendor", "UPSTREAM_URL=" + vendor.URL + "/v1"}
	for _, e := range c.Env {
		e = strings.ReplaceAll(e, "/data", data)
		e = strings.ReplaceAll(e, "=/functions", "="+filepath.Join(fs, "functions"))
		e = strings.ReplaceAll(e, "0.0.0.0:8787", addr)
		env = append(env, e)
	}
	gw := func(args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(fs, "gateway"), args...)
		cmd.Env, cmd.Dir = env, data
		return cmd
	}
	if out, err := gw("admin", "migrate").CombinedOutput(); err != nil {
		t.Fatalf("admin migrate: %v\n%s", err, out)
	}
	out, err := gw("admin", "key", "container@example.com").Output()
	if err != nil {
		t.Fatalf("admin key: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	serve := gw("serve")
	var logs testenv.Output
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	cl, err := client.New("http://"+addr+"/v1", lines[len(lines)-1], client.WithAttempts(20))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := cl.Decide(ctx, json.RawMessage(`{"state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`))
	if err != nil {
		t.Fatalf("decision from the image's gateway: %v\n%s", err, logs.String())
	}
	if d.Answers["fruit"].Choice != "apple" || d.Credits == nil || *d.Credits != 1 {
		t.Fatalf("decision %+v", d)
	}
	if _, err := os.Stat(filepath.Join(data, "ledger.db")); err != nil {
		t.Fatalf("the ledger is not in the data directory: %v", err)
	}
}

// The image's gateway, as scripts/container-context.sh builds it, is one
// static file with SQLite linked in (the embedded ledger is SQLite through
// cgo): it needs no shared library, and it creates and migrates an
// embedded ledger. Checked without podman, which the test above needs.
func TestContainerGatewayIsStaticAndOpensItsLedger(t *testing.T) {
	root := testenv.Root(t)
	ctxDir := filepath.Join(t.TempDir(), "context")
	if out, err := exec.Command("bash", filepath.Join(root, "scripts", "container-context.sh"), ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("container-context.sh: %v\n%s", err, out)
	}
	gw := filepath.Join(ctxDir, "gateway")
	checkStatic(t, gw)
	cmd := exec.Command(gw, "admin", "migrate")
	cmd.Env = append(os.Environ(), "LIBSQL_URL=file:"+filepath.Join(t.TempDir(), "data", "ledger.db"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0006_decision_settlement.sql") {
		t.Fatalf("the static gateway's admin migrate: %v\n%s", err, out)
	}
}

// checkStatic fails unless path is an ELF executable with no interpreter
// and no shared libraries: it runs in an image with nothing else.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("image /gateway: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("image /gateway is dynamically linked (has an interpreter)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("image /gateway needs %v", libs)
	}
}
