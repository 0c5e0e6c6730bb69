package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"decisiongateway/shared/contract"
	"decisiongateway/wasm-host/childproc"
	"decisiongateway/wasm-host/hostconfig"
)

// cmdDev runs every generated Worker in one `wrangler dev` (workerd on this
// machine), the front Worker first so that it takes the port. Settings and
// secrets come from an env file, written as each function Worker's
// .dev.vars (which wrangler reads and git ignores), and for the front its
// plain settings and the ledger's secrets (/readyz); with -local the AI
// stand-in calls AI_REST_URL, or UPSTREAM_URL when that is unset.
func cmdDev(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	out := fs.String("out", "wrangler-compat/generated", "the generated Workers")
	envFile := fs.String("env-file", "", "NAME=VALUE lines: the settings and secrets of every function Worker (LIBSQL_URL, UPSTREAM_KIND, …)")
	port := fs.Int("port", 8788, "port of the front Worker on 127.0.0.1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := readManifest(*out)
	if err != nil {
		return err
	}
	settings := map[string]string{}
	if *envFile != "" {
		if settings, err = readEnv(*envFile); err != nil {
			return err
		}
	}
	if settings["LIBSQL_URL"] == "" {
		return errors.New("LIBSQL_URL is not set in -env-file: the Workers need a libSQL server (sqld) over HTTP; migrate it first with `bin/gateway admin migrate`")
	}
	// Every setting is checked before workerd starts, by the rules the
	// wazero host applies at its start (and the Workers apply again on
	// their first request): a bad value stops here, named.
	for k, v := range settings {
		if row := contract.SettingNamed(k); row != nil && v != "" {
			if _, err := hostconfig.Check(row, v); err != nil {
				return fmt.Errorf("%s: %w", *envFile, err)
			}
		}
	}
	var vars, front strings.Builder
	for k, v := range settings {
		fmt.Fprintf(&vars, "%s=%s\n", k, strconv.Quote(v))
		if !contract.IsSecret(k) || slices.Contains(FrontSecrets, k) {
			fmt.Fprintf(&front, "%s=%s\n", k, strconv.Quote(v))
		}
	}
	// The front reads the plain settings and the ledger's secrets for
	// /readyz, and never the upstream or mail key.
	if err := os.WriteFile(filepath.Join(*out, m.Front.Dir, ".dev.vars"), []byte(front.String()), 0o600); err != nil {
		return err
	}
	configs := []string{"-c", filepath.Join(*out, m.Front.Dir, "wrangler.toml")}
	for _, f := range m.Functions {
		dir := filepath.Join(*out, f.Dir)
		if err := os.WriteFile(filepath.Join(dir, ".dev.vars"), []byte(vars.String()), 0o600); err != nil {
			return err
		}
		configs = append(configs, "-c", filepath.Join(dir, "wrangler.toml"))
	}
	if m.AI != nil {
		ai := settings["AI_REST_URL"]
		if ai == "" {
			ai = settings["UPSTREAM_URL"]
		}
		dir := filepath.Join(*out, m.AI.Dir)
		if err := os.WriteFile(filepath.Join(dir, ".dev.vars"), []byte("AI_REST_URL="+strconv.Quote(ai)+"\n"), 0o600); err != nil {
			return err
		}
		configs = append(configs, "-c", filepath.Join(dir, "wrangler.toml"))
	} else if settings["UPSTREAM_KIND"] == "edge" {
		fmt.Fprintln(stdout, "note: these Workers bind the real Workers AI, which wrangler dev reaches only when logged in; generate with -local for the offline stand-in")
	}
	w, err := newWrangler(false, stdout)
	if err != nil {
		return err
	}
	a := append([]string{w.script, "dev"}, configs...)
	a = append(a, "--ip", "127.0.0.1", "--port", strconv.Itoa(*port), "--show-interactive-dev-session=false")
	fmt.Fprintf(stdout, "$ %s\n", command(a[1:]))
	cmd := exec.Command(w.node, a...)
	cmd.Env = w.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, os.Stderr
	// If this process is killed, wrangler is asked to stop, and stops the
	// workerd it runs the Workers in, instead of serving on as an orphan.
	childproc.StopWithParent(cmd)
	return cmd.Run()
}

// readEnv reads NAME=VALUE lines (# comments, optional double quotes).
func readEnv(path string) (map[string]string, error) {
	lines, err := readAssignments(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, a := range lines {
		value := a.value
		if uq, err := strconv.Unquote(value); err == nil && strings.HasPrefix(value, `"`) {
			value = uq
		}
		env[a.name] = value
	}
	return env, nil
}

// assignment is one NAME=VALUE line of a settings file.
type assignment struct {
	name, value string
	line        int
}

// readAssignments reads a file of NAME=VALUE lines, skipping blank lines and
// # comments; names and values are trimmed, nothing else is interpreted.
func readAssignments(path string) ([]assignment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []assignment
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE", path, i+1)
		}
		out = append(out, assignment{strings.TrimSpace(name), strings.TrimSpace(value), i + 1})
	}
	return out, nil
}
