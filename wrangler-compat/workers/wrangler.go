package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
)

// Worker size limits. Cloudflare's limits page (developers.cloudflare.com/
// workers/platform/limits) gives 64 MiB per Worker, uncompressed, on every
// plan since the 2026-09 change; before it, the limit was on the compressed
// (gzip) upload: 3 MiB on Workers Free and 10 MiB on Workers Paid. sizes
// checks the current limit and also shows where each Worker stands against
// the old ones, since an account may still be held to them.
const (
	uploadLimit     = 64 << 20
	legacyFreeLimit = 3 << 20
	legacyPaidLimit = 10 << 20
)

// wrangler runs the pinned wrangler with the Node 22 beside it.
type wrangler struct {
	node, script string
	env          []string
	dryRun       bool // print commands that need the Cloudflare API instead of running them
	log          io.Writer
}

func newWrangler(dryRun bool, log io.Writer) (*wrangler, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "wrangler-compat", "node_modules")
	w := &wrangler{
		node:   filepath.Join(dir, ".bin", "node"),
		script: filepath.Join(dir, "wrangler", "bin", "wrangler.js"),
		dryRun: dryRun,
		log:    log,
	}
	for _, p := range []string{w.node, w.script} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s is missing: run scripts/install-node-tools.sh", p)
		}
	}
	w.env = os.Environ()
	if os.Getenv("WRANGLER_SEND_METRICS") == "" {
		w.env = append(w.env, "WRANGLER_SEND_METRICS=false")
	}
	w.env = append(w.env, "PATH="+filepath.Dir(w.node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return w, nil
}

// command is how a wrangler invocation is printed: as a user would type it.
func command(args []string) string {
	var b strings.Builder
	b.WriteString("wrangler")
	for _, a := range args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\*?;&|<>()") {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// run runs wrangler with args, echoing the command and wrangler's output to
// the log, and returns its standard output. extraEnv is added to the
// environment.
func (w *wrangler) run(extraEnv []string, args ...string) (string, error) {
	fmt.Fprintf(w.log, "$ %s\n", command(args))
	cmd := exec.Command(w.node, append([]string{w.script}, args...)...)
	cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	var stdout bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, w.log)
	cmd.Stderr = w.log
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w", command(args), err)
	}
	return stdout.String(), nil
}

// quiet runs wrangler like run but keeps its standard output out of the
// log, for commands whose output is JSON to be parsed.
func (w *wrangler) quiet(args ...string) (string, error) {
	fmt.Fprintf(w.log, "$ %s\n", command(args))
	cmd := exec.Command(w.node, append([]string{w.script}, args...)...)
	cmd.Env = w.env
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = w.log
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w", command(args), err)
	}
	return stdout.String(), nil
}

// workersOf lists the generated Workers in deployment order: functions
// first, so the front's service bindings find them, then the front.
func workersOf(m *Manifest) []Worker {
	var out []Worker
	for _, f := range m.Functions {
		out = append(out, f.Worker)
	}
	if m.AI != nil {
		out = append(out, *m.AI)
	}
	return append(out, m.Front)
}

// size is one Worker's bundle as wrangler would upload it.
type size struct {
	worker      string
	raw, gzip   int64
	wranglerSay string // wrangler's own "Total Upload" line
}

var totalUpload = regexp.MustCompile(`Total Upload: ([^\n]*)`)

// measure sums what wrangler would upload from its --outdir: every module
// except source maps and its README, each also gzip-compressed.
func measure(dir string) (size, error) {
	var s size
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".map") || d.Name() == "README.md" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s.raw += int64(len(data))
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
		s.gzip += int64(z.Len())
		return nil
	})
	return s, err
}

func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }

// report prints the sizes and fails when a Worker is over the current limit.
func report(out io.Writer, sizes []size) error {
	fmt.Fprintf(out, "Worker bundles against the Workers size limits: %d MiB uploaded (every plan, current);\n", uploadLimit>>20)
	fmt.Fprintf(out, "formerly %d MiB (Free) / %d MiB (Paid) compressed.\n", legacyFreeLimit>>20, legacyPaidLimit>>20)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tUPLOAD\tGZIP\t% OF 64 MiB\t% OF 3 MiB GZIP\t% OF 10 MiB GZIP\tWRANGLER SAYS\t")
	var over []string
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f%%\t%.1f%%\t%.1f%%\t%s\t\n", s.worker, kib(s.raw), kib(s.gzip),
			100*float64(s.raw)/uploadLimit, 100*float64(s.gzip)/legacyFreeLimit, 100*float64(s.gzip)/legacyPaidLimit, s.wranglerSay)
		if s.raw > uploadLimit {
			over = append(over, s.worker)
		}
	}
	tw.Flush()
	if len(over) > 0 {
		return fmt.Errorf("over the %d MiB Worker size limit: %s", uploadLimit>>20, strings.Join(over, ", "))
	}
	return nil
}

// cmdDeploy deploys every generated Worker, function Workers first so the
// front's service bindings find them. With -dry-run nothing is uploaded:
// wrangler bundles and checks each Worker, and the sizes of the bundles are
// printed against the Workers limits.
func cmdDeploy(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	out := fs.String("out", "wrangler-compat/generated", "the generated Workers")
	secrets := fs.String("secrets", "", "file of secrets (JSON or NAME=VALUE lines) for every function Worker: LIBSQL_URL, LIBSQL_AUTH_TOKEN, UPSTREAM_API_KEY, …; the front Worker gets LIBSQL_URL and LIBSQL_AUTH_TOKEN only")
	dryRun := fs.Bool("dry-run", false, "bundle and check every Worker and print its size, without uploading")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := readManifest(*out)
	if err != nil {
		return err
	}
	if m.Local && !*dryRun {
		return errors.New("these Workers were generated with -local (AI bound to the offline stand-in): generate again without -local to deploy")
	}
	w, err := newWrangler(*dryRun, stdout)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workers-deploy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	isFunction := map[string]bool{}
	for _, f := range m.Functions {
		isFunction[f.Name] = true
	}
	frontSecrets := ""
	if *secrets != "" {
		// The front gets the ledger's secrets only, for /readyz.
		if frontSecrets, err = filterSecrets(*secrets, FrontSecrets, filepath.Join(tmp, "front-secrets.json")); err != nil {
			return err
		}
	}
	var sizes []size
	for _, wk := range workersOf(m) {
		a := []string{"deploy", "-c", filepath.Join(*out, wk.Dir, "wrangler.toml")}
		if *secrets != "" && isFunction[wk.Name] {
			a = append(a, "--secrets-file", *secrets)
		} else if frontSecrets != "" && wk.Name == m.Front.Name {
			a = append(a, "--secrets-file", frontSecrets)
		}
		bundle := filepath.Join(tmp, wk.Name)
		if *dryRun {
			a = append(a, "--dry-run", "--outdir", bundle)
		}
		text, err := w.run(nil, a...)
		if err != nil {
			return err
		}
		if !*dryRun {
			continue
		}
		s, err := measure(bundle)
		if err != nil {
			return err
		}
		s.worker = wk.Name
		if mt := totalUpload.FindStringSubmatch(text); mt != nil {
			s.wranglerSay = strings.TrimSpace(mt[1])
		}
		sizes = append(sizes, s)
	}
	if *dryRun {
		fmt.Fprintln(stdout)
		return report(stdout, sizes)
	}
	return nil
}

// filterSecrets writes the secrets of file (JSON or NAME=VALUE lines, as
// wrangler reads --secrets-file) named in keep to out as JSON, and returns
// out, or "" when none of them is there.
func filterSecrets(file string, keep []string, out string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	all := map[string]string{}
	if json.Unmarshal(data, &all) != nil {
		if all, err = readEnv(file); err != nil {
			return "", err
		}
	}
	kept := map[string]string{}
	for _, name := range keep {
		if v, ok := all[name]; ok {
			kept[name] = v
		}
	}
	if len(kept) == 0 {
		return "", nil
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return "", err
	}
	return out, os.WriteFile(out, b, 0o600)
}

// outputEvents reads the ND-JSON file wrangler writes to
// WRANGLER_OUTPUT_FILE_PATH: one JSON object per line.
func outputEvents(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines, sc.Err()
}
