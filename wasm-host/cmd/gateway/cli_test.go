package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"decisiongateway/shared/keys"
	"decisiongateway/testkit/testenv"
)

// cliRun runs bin/gateway with args and env added to a bare environment,
// and returns its stdout, stderr and exit status.
func cliRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Binary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("gateway %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// Every command and subcommand answers --help and -h on stdout with exit 0
// and its own usage line, touching nothing (no ledger exists here); the
// top-level help lists every command, release included.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands {
		want := "usage: gateway " + c.name
		if c.name == "release" {
			want = releaseUsage
		}
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(words, "--help"), append(words, "-h"), append([]string{"help"}, words...)} {
			out, errOut, code := cliRun(t, nil, args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, want) {
				t.Errorf("gateway %v: exit %d, stderr %q, stdout %q; want exit 0 and stdout starting %q", args, code, errOut, out, want)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"admin", "--help"}} {
		out, errOut, code := cliRun(t, nil, args...)
		if code != 0 || errOut != "" {
			t.Errorf("gateway %v: exit %d, stderr %q", args, code, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name) {
				t.Errorf("gateway %v does not list %q:\n%s", args, c.name, out)
			}
		}
	}
	// A subcommand's help within release is the release usage, whatever
	// else the line holds.
	if out, _, code := cliRun(t, nil, "release", "canary", "decide", "--help"); code != 0 || out != releaseUsage {
		t.Errorf("release canary --help: exit %d\n%s", code, out)
	}
}

// --version and `version` print the same line: the build's revision and
// its Go toolchain.
func TestVersion(t *testing.T) {
	first, _, code := cliRun(t, nil, "--version")
	second, _, code2 := cliRun(t, nil, "version")
	if code != 0 || code2 != 0 || first != second || !regexp.MustCompile(`^gateway \S+ \(go1\.\d+[^)]*\)\n$`).MatchString(first) {
		t.Errorf("--version: exit %d %q; version: exit %d %q", code, first, code2, second)
	}
}

// A wrong command line exits 2 and says what was wrong, naming an unknown
// command or flag; a failure of the command itself exits 1.
func TestWrongCommandLinesExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"nosuch"}, nil, `unknown command "nosuch"`},
		{[]string{"admin", "nosuch", "x"}, nil, `unknown command "admin nosuch"`},
		{[]string{"admin"}, nil, `unknown command "admin"`},
		{nil, nil, "usage: gateway COMMAND"},
		{[]string{"admin", "credits", "ops@example.com"}, nil, "usage: gateway admin credits"},
		{[]string{"admin", "credits", "ops@example.com", "0"}, nil, "N must be a whole number"},
		{[]string{"admin", "credits", "ops@example.com", "9223372036854775807"}, nil, "N must be a whole number from 1 to 1000000000000"},
		{[]string{"admin", "accounts", "--bogus"}, nil, "unknown flag --bogus"},
		{[]string{"admin", "usage", "--format", "xml"}, nil, `--format "xml"`},
		{[]string{"admin", "usage", "--since", "yesterday"}, nil, `--since "yesterday"`},
		{[]string{"admin", "revoke"}, nil, "usage: gateway admin revoke KEY_ID"},
		{[]string{"admin", "key", "k@example.com", " "}, nil, "key name must be 1 to 64 characters"},
		{[]string{"admin", "revoke", keys.New(keys.APIKey, keys.NewAccountID())}, nil, "that argument is a secret (dgk_…)"},
		{[]string{"admin", "account", keys.New(keys.Session, keys.NewAccountID())}, nil, "that argument is a secret (dgs_…)"},
		{[]string{"routes", "extra"}, nil, "routes takes no arguments"},
		{[]string{"serve", "--bogus"}, nil, "flag provided but not defined: -bogus"},
		{[]string{"release", "nosuch", "decide"}, nil, `unknown command "release nosuch"`},
		{[]string{"release"}, nil, "release needs a subcommand"},
		{[]string{"release", "canary", "decide"}, nil, "release canary takes FUNCTION PATH.wasm STEPS"},
		{[]string{"release", "promote"}, nil, "release promote takes a FUNCTION"},
		{[]string{"release", "canary", "decide", "x.wasm", "10", "--bogus"}, nil, "unknown flag --bogus"},
		{[]string{"release", "canary", "decide", "x.wasm", "10", "--min-samples", "abc"}, nil, `--min-samples "abc"`},
		{[]string{"release", "canary", "decide", "x.wasm", "50,10"}, nil, `STEPS "50,10"`},
		{[]string{"release", "rollback", "decide", "--pause", "1m"}, nil, "release rollback takes no --pause"},
		{[]string{"release", "analyze", "x"}, nil, "release analyze takes no arguments"},
		{[]string{"release", "status", "decide", "extra"}, nil, "release status takes at most a FUNCTION"},
		{[]string{"release", "advance", "nosuch"}, nil, `no route is served by a function named "nosuch"`},
		{[]string{"version"}, []string{"GATEWAY_LOG_LEVEL=loud"}, "GATEWAY_LOG_LEVEL"},
	} {
		out, errOut, code := cliRun(t, c.env, c.args...)
		for _, arg := range c.args {
			if _, secret := keys.Parse(keys.APIKey, arg); secret && strings.Contains(errOut, arg[len(arg)-12:]) {
				t.Errorf("gateway %v repeats the secret it was given: %q", c.args, errOut)
			}
			if _, secret := keys.Parse(keys.Session, arg); secret && strings.Contains(errOut, arg[len(arg)-12:]) {
				t.Errorf("gateway %v repeats the secret it was given: %q", c.args, errOut)
			}
		}
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("gateway %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	// The command line is checked before the ledger is opened: none exists
	// here, and each wrong one above still exited 2.
	// An address that merely starts like a secret is an address.
	if _, errOut, code := cliRun(t, nil, "admin", "account", "dgk_someone@example.com"); code != 1 || strings.Contains(errOut, "secret") {
		t.Errorf("admin account dgk_someone@example.com: exit %d, %q", code, errOut)
	}
	// Right command line, no ledger: the command fails (1), naming why.
	if _, errOut, code := cliRun(t, nil, "admin", "accounts"); code != 1 || !strings.Contains(errOut, "admin migrate") {
		t.Errorf("admin accounts without a ledger: exit %d, %q", code, errOut)
	}
}

// serveUntil runs the gateway with args in dir, behind the command line
// front when there is one (prlimit …), with the settings env besides the
// functions and a data directory of its own; it decodes into into the
// first log line whose msg is msg and returns once it has read it (or the
// log ended). The process is stopped at the test's end.
func serveUntil(t *testing.T, dir string, front, env []string, msg string, into any, args ...string) {
	t.Helper()
	argv := append(append(append([]string{}, front...), testenv.Binary(t)), args...)
	stderr, stop := startProgram(t, dir, argv, append([]string{"SERVICE_ADDR=127.0.0.1:0"}, env...))
	t.Cleanup(stop)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var l struct{ Msg string }
		if json.Unmarshal(lines.Bytes(), &l) == nil && l.Msg == msg {
			json.Unmarshal(lines.Bytes(), into)
			break
		}
	}
	go io.Copy(io.Discard, stderr)
}

// startProgram starts argv in dir with the test's functions, a data
// directory of its own and env, and returns its standard error and what
// stops it (SIGTERM, then waiting for it to exit).
func startProgram(t *testing.T, dir string, argv, env []string) (io.ReadCloser, func()) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GATEWAY_FUNCTIONS_DIR=" + filepath.Join(testenv.Root(t), "build", "functions"), "GATEWAY_DATA_DIR=" + t.TempDir()}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stderr, func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
}

// `serve` with GATEWAY_METRICS_ADDR answers the metrics on that listener
// to any client, labelled with the version --version prints.
func TestServeAnswersMetricsOnTheirOwnListener(t *testing.T) {
	dir := t.TempDir()
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	version, _, _ := cliRun(t, nil, "--version")
	var serving struct{ Addr string }
	serveUntil(t, dir, nil, []string{"GATEWAY_METRICS_ADDR=127.0.0.1:0"}, "serving metrics", &serving, "serve")
	addr := serving.Addr
	if addr == "" {
		t.Fatal("serve never logged its metrics address")
	}
	resp, err := http.Get(addr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `gateway_build_info{version="` + strings.Fields(version)[1] + `"} 1`
	if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
		t.Errorf("metrics listener: %d, want %q in\n%s", resp.StatusCode, want, body)
	}
}

// `serve` on another address than SERVICE_ORIGIN's default, with
// SERVICE_ORIGIN unset, says so before it serves: the console at the
// printed address would have every write refused 403 origin_not_allowed.
// Set to that address, or on the default address, it says nothing.
func TestServeWarnsWhenTheConsoleOriginIsNotItsAddress(t *testing.T) {
	dir := t.TempDir()
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	// warned serves with env and reports whether it warned before it
	// served, and the address it served on; taken, when the address named
	// was no longer free (another process bound it since it was picked).
	warned := func(env ...string) (warning bool, served string, taken bool) {
		stderr, stop := startProgram(t, dir, []string{testenv.Binary(t), "serve"}, env)
		defer stop()
		defer func() { go io.Copy(io.Discard, stderr) }()
		var said strings.Builder
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			said.Write(lines.Bytes())
			said.WriteByte('\n')
			var l struct{ Msg, Origin, Addr string }
			if json.Unmarshal(lines.Bytes(), &l) != nil {
				continue
			}
			if strings.HasPrefix(l.Msg, "SERVICE_ORIGIN is unset") {
				warning = l.Origin == "http://127.0.0.1:8787" && strings.HasPrefix(l.Addr, "http://127.0.0.1:")
			}
			if l.Msg == "serving" {
				return warning, strings.TrimPrefix(l.Addr, "http://"), false
			}
		}
		if strings.Contains(said.String(), "address already in use") {
			return false, "", true
		}
		t.Fatalf("serve %v stopped before serving:\n%s", env, said.String())
		return false, "", false
	}
	// Port 0: the kernel's choice, which no other process can hold.
	if warning, addr, _ := warned("SERVICE_ADDR=127.0.0.1:0"); !warning {
		t.Errorf("serve on %s with SERVICE_ORIGIN unset gave no warning", addr)
	}
	// SERVICE_ORIGIN must name the address before it is bound, so a free
	// one is picked; one another process took meanwhile is picked again.
	for attempt := 1; ; attempt++ {
		addr := testenv.FreeAddr(t)
		warning, _, taken := warned("SERVICE_ADDR="+addr, "SERVICE_ORIGIN=http://"+addr)
		if taken && attempt < 5 {
			continue
		}
		if taken {
			t.Fatalf("every free address picked was taken before serve bound it")
		}
		if warning {
			t.Errorf("serve on %s with SERVICE_ORIGIN=http://%s warned", addr, addr)
		}
		break
	}
}

// A module of another function is refused by `release canary`: every
// function speaks the same ABI, so models.wasm released as decide would
// load, pass its canary and answer decisions with a model list.
func TestReleaseRefusesAnotherFunctionsModule(t *testing.T) {
	dir := t.TempDir()
	env := []string{"LIBSQL_URL=file:" + filepath.Join(dir, "ledger.db"), "GATEWAY_DATA_DIR=" + dir,
		"GATEWAY_FUNCTIONS_DIR=" + filepath.Join(testenv.Root(t), "build", "functions")}
	if _, errOut, code := cliRun(t, env, "admin", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	models := filepath.Join(testenv.Root(t), "build", "functions", "models.wasm")
	out, errOut, code := cliRun(t, env, "release", "canary", "decide", models, "50")
	if code != 1 || out != "" || !strings.Contains(errOut, `the module is the "models" function, not "decide"`) {
		t.Fatalf("release canary decide models.wasm: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Nothing was released: status shows no canary.
	if out, _, code := cliRun(t, env, "release", "status", "decide"); code != 0 || strings.Contains(out, "50.00%") {
		t.Errorf("status after the refusal: exit %d\n%s", code, out)
	}
	// A module that names no function (built some other way) is refused too.
	raw, err := os.ReadFile(filepath.Join(testenv.Root(t), "build", "functions", "decide.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "unnamed.wasm")
	at := bytes.LastIndex(raw, []byte("\x00\x17\x10gateway.function"))
	if at < 0 {
		t.Fatal("decide.wasm has no gateway.function section: build it with make build")
	}
	os.WriteFile(cut, raw[:at], 0o644)
	if _, errOut, code := cliRun(t, env, "release", "canary", "decide", cut, "50"); code != 1 || !strings.Contains(errOut, "does not say which function it is") {
		t.Fatalf("an unnamed module: exit %d, %q", code, errOut)
	}
	// Its own module is accepted.
	decide := filepath.Join(testenv.Root(t), "build", "functions", "decide.wasm")
	if out, errOut, code := cliRun(t, env, "release", "canary", "decide", decide, "50"); code != 0 || !strings.Contains(out, "canary decide@") {
		t.Fatalf("release canary decide decide.wasm: exit %d, %q %q", code, out, errOut)
	}
}
