package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"decisiongateway/wasm-host/canary"
)

// A gradual rollout of one function on Workers, the counterpart of
// `gateway release` on the wazero host:
//
//   - canary: the new module is written into a copy of the function's
//     Worker (same name, same bindings and vars), uploaded as a new version
//     without deploying it (wrangler versions upload), then deployed beside
//     the current one with a percentage split (wrangler versions deploy
//     NEW@P% OLD@(100-P)%). The front Worker sends every request with the
//     caller's account as Cloudflare-Workers-Version-Key, so Cloudflare keeps
//     an account on one version, as the wazero host's buckets do.
//   - promote: the canary serves 100%.
//   - rollback: the stable version serves 100% again; with no canary, the
//     last version that served 100% before the current one comes back
//     (wrangler rollback VERSION), undoing a promotion.
//
// The canary of a split is the newer of its two versions. `release watch
// FUNCTION STEPS` judges it on the ledger's counts and steps, promotes or
// rolls it back by itself (watch.go); a ramp of the same build (canary
// with the same file and a new share) uploads nothing and keeps the
// version ids, so callers keep their version.
//
// With -dry-run nothing reaches the Cloudflare API: the new version is
// bundled and checked (wrangler versions upload --dry-run, which works
// offline) and the deployment commands are printed with placeholders for
// the version ids only the API knows.

// Placeholders printed by -dry-run where the API would give version ids.
const (
	newVersionID    = "<new-version-id>"
	stableVersionID = "<stable-version-id>"
	canaryVersionID = "<canary-version-id>"
	previousID      = "<previous-stable-version-id>"
)

// traffic is one version's share of a deployment, as wrangler's JSON has it.
type traffic struct {
	VersionID  string  `json:"version_id"`
	Percentage float64 `json:"percentage"`
}

// deployment is the part of `wrangler deployments status --json` (and of
// each item of `deployments list --json`) used here.
type deployment struct {
	CreatedOn string    `json:"created_on"`
	Versions  []traffic `json:"versions"`
}

// previousStable finds the version to undo a promotion with: the newest
// version that served 100% in a deployment before the latest one and is not
// the current one. (wrangler rollback without a version picks the newest
// earlier 100% deployment, which after a canary's rollback is the current
// version itself.)
func previousStable(deployments []deployment, current string) (string, error) {
	sorted := slices.Clone(deployments)
	// created_on is RFC 3339 in UTC, so text order is time order.
	slices.SortFunc(sorted, func(a, b deployment) int { return strings.Compare(b.CreatedOn, a.CreatedOn) })
	for i, d := range sorted {
		if i == 0 {
			continue // the current deployment
		}
		if len(d.Versions) == 1 && d.Versions[0].Percentage == 100 && d.Versions[0].VersionID != current {
			return d.Versions[0].VersionID, nil
		}
	}
	return "", errors.New("no earlier version served 100%: nothing to roll back to")
}

// versionInfo is the part of `wrangler versions list --json` used here.
type versionInfo struct {
	ID       string `json:"id"`
	Metadata struct {
		CreatedOn string `json:"created_on"`
	} `json:"metadata"`
	// Annotations carry workers/tag: the first 12 hex of the module's
	// SHA-256, which `release canary` tags each upload with.
	Annotations map[string]string `json:"annotations"`
}

// split tells the stable and the canary version of a deployment apart: the
// canary is the more recently created of two. With one version there is no
// canary ("" is returned for it).
func split(d deployment, versions []versionInfo) (stable, canary string, err error) {
	switch len(d.Versions) {
	case 1:
		return d.Versions[0].VersionID, "", nil
	case 2:
	default:
		return "", "", fmt.Errorf("the deployment has %d versions; want one or two", len(d.Versions))
	}
	created := map[string]string{}
	for _, v := range versions {
		created[v.ID] = v.Metadata.CreatedOn
	}
	a, b := d.Versions[0].VersionID, d.Versions[1].VersionID
	ca, okA := created[a]
	cb, okB := created[b]
	if !okA || !okB {
		return "", "", errors.New("the versions of the deployment are not in `wrangler versions list`")
	}
	// created_on is RFC 3339 in UTC, so text order is time order.
	if ca > cb {
		return b, a, nil
	}
	return a, b, nil
}

// percent checks a share for `wrangler versions deploy`: 0 to 100.
func percent(s string) (float64, error) {
	p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || p < 0 || p > 100 {
		return 0, fmt.Errorf("PERCENT %q: want a number from 0 to 100", s)
	}
	return p, nil
}

func formatPercent(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) + "%" }

// splitArgs is the deploy command of a canary at p percent beside stable.
func splitArgs(config, canary, stable string, p float64, message string) []string {
	return []string{"versions", "deploy", canary + "@" + formatPercent(p), stable + "@" + formatPercent(100-p),
		"--yes", "--message", message, "-c", config}
}

func cmdRelease(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	out := fs.String("out", "wrangler-compat/generated", "the generated Workers")
	dryRun := fs.Bool("dry-run", false, "check the new version's bundle and print the deployment commands, without the Cloudflare API")
	ledgerURL := fs.String("ledger", os.Getenv("LIBSQL_URL"), "the ledger the Workers write to (watch; canary refuses versions that failed there)")
	force := fs.Bool("force", false, "canary a version that failed analysis before")
	policy := canary.DefaultPolicy
	fs.Int64Var(&policy.MinSamples, "min-samples", policy.MinSamples, "watch: canary requests a step needs before it can pass")
	fs.Float64Var(&policy.MaxErrorRate, "max-error-rate", policy.MaxErrorRate, "watch: how far the canary's error rate may exceed stable's")
	fs.Float64Var(&policy.MaxLatencyRatio, "max-latency-ratio", policy.MaxLatencyRatio, "watch: how many times stable's mean function time the canary may take")
	every := fs.Duration("every", 30*time.Second, "watch: time between analyses")
	once := fs.Bool("once", false, "watch: one analysis, then exit")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return errors.New(usage)
	}
	m, err := readManifest(*out)
	if err != nil {
		return err
	}
	f, err := m.function(pos[1])
	if err != nil {
		return err
	}
	w, err := newWrangler(*dryRun, stdout)
	if err != nil {
		return err
	}
	r := &rollout{w: w, m: m, f: f, out: *out, config: filepath.Join(*out, f.Dir, "wrangler.toml"), stdout: stdout}
	switch {
	case pos[0] == "canary" && len(pos) == 4:
		p, err := percent(pos[3])
		if err != nil {
			return err
		}
		if !*dryRun && !*force && *ledgerURL != "" {
			if err := refuseFailed(*ledgerURL, f.Function, pos[2]); err != nil {
				return err
			}
		}
		return r.canary(pos[2], p)
	case pos[0] == "watch" && len(pos) == 3:
		plan, err := canary.ParseSteps(pos[2])
		if err != nil {
			return fmt.Errorf("STEPS %q: %w", pos[2], err)
		}
		store, closeLedger, err := ledgerStore(*ledgerURL)
		if err != nil {
			return err
		}
		defer closeLedger()
		return r.watch(store, plan, policy, *every, *once)
	case pos[0] == "promote" && len(pos) == 2:
		return r.promote()
	case pos[0] == "rollback" && len(pos) == 2:
		return r.rollback()
	case pos[0] == "status" && len(pos) == 2:
		return r.status()
	}
	return errors.New(usage)
}

// refuseFailed refuses the module at path when it failed analysis before,
// on Workers or on the wazero hosts (the same ledger table).
func refuseFailed(ledgerURL, function, path string) error {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	store, closeLedger, err := ledgerStore(ledgerURL)
	if err != nil {
		return err
	}
	defer closeLedger()
	return store.CheckNotFailed(context.Background(), canary.VersionOf(function, wasm))
}

// parseInterleaved parses fs's flags wherever they stand among the
// arguments (`release canary decide F 10 -dry-run` as well as `release
// -dry-run canary …`) and returns the arguments. The flag package alone
// stops at the first argument and would leave a later flag unread.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" { // everything after is an argument
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// rollout is one release command on one function Worker.
type rollout struct {
	w      *wrangler
	m      *Manifest
	f      *FunctionEntry
	out    string
	config string // the function Worker's wrangler.toml
	stdout io.Writer
}

// api runs a command that needs the Cloudflare API, or prints it in a dry run.
func (r *rollout) api(args ...string) error {
	if r.w.dryRun {
		fmt.Fprintf(r.stdout, "would run: %s\n", command(args))
		return nil
	}
	_, err := r.w.run(nil, args...)
	return err
}

// current returns the stable and canary version ids of the function's
// deployment (canary "" when it has one version).
func (r *rollout) current() (stable, canary string, err error) {
	stable, canary, _, err = r.currentTagged()
	return stable, canary, err
}

// currentTagged is current, with the canary's workers/tag (the first 12
// hex of its module's SHA-256) when it has one.
func (r *rollout) currentTagged() (stable, canary, canaryTag string, err error) {
	var d deployment
	text, err := r.w.quiet("deployments", "status", "--json", "-c", r.config)
	if err != nil {
		return "", "", "", err
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return "", "", "", fmt.Errorf("deployments status: %w", err)
	}
	var versions []versionInfo
	if len(d.Versions) == 2 {
		text, err := r.w.quiet("versions", "list", "--json", "-c", r.config)
		if err != nil {
			return "", "", "", err
		}
		if err := json.Unmarshal([]byte(text), &versions); err != nil {
			return "", "", "", fmt.Errorf("versions list: %w", err)
		}
	}
	stable, canary, err = split(d, versions)
	for _, v := range versions {
		if v.ID == canary && canary != "" {
			canaryTag = v.Annotations["workers/tag"]
		}
	}
	return stable, canary, canaryTag, err
}

func (r *rollout) canary(path string, p float64) error {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := canary.CheckFunction(r.f.Function, wasm); err != nil {
		return err
	}
	sum := sha256.Sum256(wasm)
	nf := *r.f
	nf.SHA256 = hex.EncodeToString(sum[:])
	nf.Version = nf.Function + "@" + nf.SHA256[:12]
	if !r.w.dryRun {
		// A ramp of the current canary changes its share only: the same
		// version ids keep Cloudflare's version affinity, so the callers
		// already on the canary stay there, and nothing is uploaded again.
		stable, canary, tag, err := r.currentTagged()
		if err != nil {
			return err
		}
		if canary != "" && tag == nf.SHA256[:12] {
			if err := r.api(splitArgs(r.config, canary, stable, p, "ramp "+nf.Version)...); err != nil {
				return err
			}
			fmt.Fprintf(r.stdout, "%s (version %s, already uploaded) now serves %s of accounts\n", nf.Version, canary, formatPercent(p))
			return nil
		}
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(r.out, "releases", nf.Function, nf.SHA256[:12])
	o := genOptions{Src: filepath.Join(root, "wrangler-compat", "src"), Vars: r.m.Vars}
	if err := writeFunction(o, r.m, nf, dir, wasm); err != nil {
		return err
	}
	message := "canary " + nf.Version
	upload := []string{"versions", "upload", "-c", filepath.Join(dir, "wrangler.toml"), "--tag", nf.SHA256[:12], "--message", message}
	if r.w.dryRun {
		// Bundles and checks the new version for real; only the upload is skipped.
		if _, err := r.w.run(nil, append(upload, "--dry-run")...); err != nil {
			return err
		}
		fmt.Fprintf(r.stdout, "would run: %s\n", command(upload))
		fmt.Fprintf(r.stdout, "would run: %s\n", command(splitArgs(r.config, newVersionID, stableVersionID, p, message)))
		fmt.Fprintf(r.stdout, "(%s is the version upload prints; %s is the larger share of `wrangler deployments status -c %s`)\n", newVersionID, stableVersionID, r.config)
		return nil
	}
	events := filepath.Join(os.TempDir(), fmt.Sprintf("workers-upload-%d.ndjson", os.Getpid()))
	defer os.Remove(events)
	if _, err := r.w.run([]string{"WRANGLER_OUTPUT_FILE_PATH=" + events}, upload...); err != nil {
		return err
	}
	newID, err := uploadedVersion(events)
	if err != nil {
		return err
	}
	stable, _, err := r.current()
	if err != nil {
		return err
	}
	if err := r.api(splitArgs(r.config, newID, stable, p, message)...); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "%s (version %s) serves %s of accounts; promote or roll back with `workers release promote|rollback %s`\n",
		nf.Version, newID, formatPercent(p), nf.Function)
	return nil
}

// uploadedVersion finds the version id in wrangler's output events.
func uploadedVersion(path string) (string, error) {
	lines, err := outputEvents(path)
	if err != nil {
		return "", err
	}
	for _, line := range lines {
		var e struct {
			Type      string `json:"type"`
			VersionID string `json:"version_id"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "version-upload" && e.VersionID != "" {
			return e.VersionID, nil
		}
	}
	return "", errors.New("wrangler versions upload reported no version id")
}

func (r *rollout) promote() error {
	if r.w.dryRun {
		return r.api("versions", "deploy", canaryVersionID+"@100%", "--yes", "--message", "promote", "-c", r.config)
	}
	_, canary, err := r.current()
	if err != nil {
		return err
	}
	if canary == "" {
		return fmt.Errorf("%s has no canary to promote: its deployment has one version", r.f.Name)
	}
	return r.api("versions", "deploy", canary+"@100%", "--yes", "--message", "promote", "-c", r.config)
}

func (r *rollout) rollback() error {
	if r.w.dryRun {
		fmt.Fprintln(r.stdout, "with a canary:")
		r.api("versions", "deploy", stableVersionID+"@100%", "--yes", "--message", "rollback", "-c", r.config)
		fmt.Fprintln(r.stdout, "without one (undo the last promotion):")
		return r.api("rollback", previousID, "--yes", "--message", "rollback", "-c", r.config)
	}
	stable, canary, err := r.current()
	if err != nil {
		return err
	}
	if canary != "" {
		return r.api("versions", "deploy", stable+"@100%", "--yes", "--message", "rollback", "-c", r.config)
	}
	text, err := r.w.quiet("deployments", "list", "--json", "-c", r.config)
	if err != nil {
		return err
	}
	var ds []deployment
	if err := json.Unmarshal([]byte(text), &ds); err != nil {
		return fmt.Errorf("deployments list: %w", err)
	}
	previous, err := previousStable(ds, stable)
	if err != nil {
		return err
	}
	return r.api("rollback", previous, "--yes", "--message", "rollback", "-c", r.config)
}

func (r *rollout) status() error {
	return r.api("deployments", "status", "-c", r.config)
}
