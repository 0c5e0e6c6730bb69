package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"decisiongateway/wasm-host/canary"
	"decisiongateway/wasm-host/ledger"
)

// Automatic analysis of a Workers canary: `release watch FUNCTION STEPS`.
//
// On Workers, Cloudflare splits the traffic between the two versions of a
// gradual deployment; the function Workers count their outcomes per module
// version into the ledger's release_samples (src/samples.js), as the
// wazero hosts do. watch reads them, judges the canary against stable with
// the hosts' own analysis (canary.Judge) over the window since the current
// deployment, and then deploys the next step of the plan (same two version
// ids, so Cloudflare keeps every caller's version affinity), promotes the
// canary after the last step, or rolls it back, writing each decision and
// its reason into the ledger's release history; a rolled-back version is
// refused by later `release canary` unless -force.
//
// It is a command, not a scheduled Worker, because it needs the
// Cloudflare API token that can deploy: kept where operators run
// deployments (a CI job, a terminal), not as a secret inside the account's
// own Workers. The difference to the wazero host: there, each step admits at
// most its sample of canary requests before its verdict; here Cloudflare
// picks the version before any of our code runs, so a broken canary's
// exposure is its share of the traffic until the next tick (-every).

// ledgerStore opens the ledger the Workers write to.
func ledgerStore(url string) (*canary.Store, func(), error) {
	if url == "" {
		return nil, nil, errors.New("no ledger: set LIBSQL_URL or -ledger to the ledger the Workers write to")
	}
	led, err := ledger.Open(context.Background(), url, "")
	if err != nil {
		return nil, nil, err
	}
	return canary.NewStore(led), func() { led.Close() }, nil
}

// tick judges the current canary once and acts. It reports false when
// there is no canary left to watch.
func (r *rollout) tick(ctx context.Context, store *canary.Store, plan []canary.Step, policy canary.Policy) (bool, error) {
	var d deployment
	text, err := r.w.quiet("deployments", "status", "--json", "-c", r.config)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return false, fmt.Errorf("deployments status: %w", err)
	}
	stable, canaryID, tag, err := r.currentTagged()
	if err != nil {
		return false, err
	}
	if canaryID == "" {
		fmt.Fprintf(r.stdout, "%s: no canary\n", r.f.Function)
		return false, nil
	}
	if tag == "" {
		return false, fmt.Errorf("the canary version %s has no workers/tag: it was not uploaded by `workers release canary`", canaryID)
	}
	share := 0.0
	for _, v := range d.Versions {
		if v.VersionID == canaryID {
			share = v.Percentage
		}
	}
	since, err := time.Parse(time.RFC3339, d.CreatedOn)
	if err != nil {
		return false, fmt.Errorf("deployment created_on %q: %w", d.CreatedOn, err)
	}
	// Whole buckets (one second, src/samples.js) after the deployment only:
	// the second it happened in holds requests of the split before it.
	from := since.Unix() + 1
	c, s, sha, err := store.WindowCounts(ctx, r.f.Function, tag, from)
	if err != nil {
		return false, err
	}
	if sha == "" {
		sha = tag
	}
	v := canary.Version{Function: r.f.Function, SHA256: sha}
	j := canary.Judge(c, s, policy)
	step := fmt.Sprintf("%s at %s", v.Label(), formatPercent(share))
	switch j.Verdict {
	case "inconclusive":
		fmt.Fprintf(r.stdout, "%s: %s\n", step, j.Reason)
		return true, nil
	case "fail":
		reason := "workers: " + step + ": " + j.Reason
		if err := r.api("versions", "deploy", stable+"@100%", "--yes", "--message", "auto-rollback", "-c", r.config); err != nil {
			return false, err
		}
		fmt.Fprintf(r.stdout, "rolled back %s\n", reason)
		return false, store.RecordDecision(ctx, v, "auto-rollback", reason)
	}
	for _, next := range plan {
		if float64(next.Share)/100 > share {
			p := float64(next.Share) / 100
			if err := r.api(splitArgs(r.config, canaryID, stable, p, "step "+v.Label())...); err != nil {
				return false, err
			}
			detail := fmt.Sprintf("workers: step to %s: automatic: %s", formatPercent(p), j.Reason)
			fmt.Fprintf(r.stdout, "%s: %s\n", v.Label(), detail)
			return true, store.RecordDecision(ctx, v, "canary", detail)
		}
	}
	if err := r.api("versions", "deploy", canaryID+"@100%", "--yes", "--message", "promote", "-c", r.config); err != nil {
		return false, err
	}
	detail := "workers: automatic: " + step + ": " + j.Reason
	fmt.Fprintf(r.stdout, "promoted %s\n", detail)
	return false, store.RecordDecision(ctx, v, "promote", detail)
}

// watch ticks every interval until the canary is promoted or rolled back
// (once: a single tick).
func (r *rollout) watch(store *canary.Store, plan []canary.Step, policy canary.Policy, every time.Duration, once bool) error {
	ctx := context.Background()
	for {
		more, err := r.tick(ctx, store, plan, policy)
		if err != nil || !more || once {
			return err
		}
		time.Sleep(every)
	}
}
