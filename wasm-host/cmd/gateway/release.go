package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/canary"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
)

const releaseUsage = `usage:
  gateway release status [FUNCTION]
  gateway release canary FUNCTION PATH.wasm PERCENT [--max-error-rate R] [--min-samples N]
  gateway release promote FUNCTION
  gateway release rollback FUNCTION [--reason TEXT]

Release state lives in the ledger (LIBSQL_URL); running hosts apply a change
within a few seconds, without a restart. A canary serves PERCENT of callers
(sticky per account) and is rolled back by the hosts themselves when more than
R of its requests fail (default 0.05) once it served N (default 100).
`

// release runs `gateway release …`, the operator side of wasm-host/canary.
func release(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(releaseUsage)
	}
	pos, flags, err := splitFlags(args[1:])
	if err != nil {
		return err
	}
	ctx := context.Background()
	cfg, led, err := openLedger(ctx)
	if err != nil {
		return err
	}
	defer led.Close()
	store := canary.NewStore(led)
	need := func(n int) error {
		if len(pos) != n {
			return fmt.Errorf("release %s takes %d argument(s)\n%s", args[0], n, releaseUsage)
		}
		return routed(pos[0])
	}
	switch args[0] {
	case "status":
		if len(pos) > 1 {
			return errors.New(releaseUsage)
		}
		return releaseStatus(ctx, cfg, store, pos, out)
	case "canary":
		if err := need(3); err != nil {
			return err
		}
		return releaseCanary(ctx, cfg, store, pos, flags, out)
	case "promote":
		if err := need(1); err != nil {
			return err
		}
		v, err := store.Promote(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "promoted %s: it is the stable version for every caller\n", v.Label())
		return nil
	case "rollback":
		if err := need(1); err != nil {
			return err
		}
		reason := flags["reason"]
		if reason == "" {
			reason = "operator"
		}
		what, v, err := store.Rollback(ctx, pos[0], reason)
		if err != nil {
			return err
		}
		if what == "canary" {
			fmt.Fprintf(out, "rolled back canary %s: every caller is on the stable version\n", v.Label())
		} else {
			fmt.Fprintf(out, "rolled back the promotion of %s: the stable version before it serves again\n", v.Label())
		}
		return nil
	}
	return fmt.Errorf("unknown release command %q\n%s", args[0], releaseUsage)
}

// splitFlags separates --name VALUE (or --name=VALUE) flags, which may come
// anywhere, from positional arguments.
func splitFlags(args []string) ([]string, map[string]string, error) {
	var pos []string
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			pos = append(pos, a)
			continue
		}
		name, value, ok := strings.Cut(a[2:], "=")
		if !ok {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "max-error-rate", "min-samples", "reason":
			flags[name] = value
		default:
			return nil, nil, fmt.Errorf("unknown flag --%s\n%s", name, releaseUsage)
		}
	}
	return pos, flags, nil
}

// routed refuses a function the route table does not serve: a release of
// it would never be applied.
func routed(function string) error {
	for _, r := range routes.Table {
		if r.Function == function {
			return nil
		}
	}
	return fmt.Errorf("no route is served by a function named %q (see `gateway routes`)", function)
}

func releaseCanary(ctx context.Context, cfg *hostconfig.Config, store *canary.Store, pos []string, flags map[string]string, out io.Writer) error {
	function, path := pos[0], pos[1]
	share, ok := canary.ParsePercent(pos[2])
	if !ok {
		return fmt.Errorf("PERCENT %q: want a number from 0 to 100 with at most two decimals", pos[2])
	}
	bound := canary.DefaultBound
	if v, ok := flags["max-error-rate"]; ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || r > 1 {
			return fmt.Errorf("--max-error-rate %q: want a fraction from 0 to 1, such as 0.05", v)
		}
		bound.MaxErrorRate = r
	}
	if v, ok := flags["min-samples"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("--min-samples %q: want a whole number ≥ 1", v)
		}
		bound.MinSamples = n
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := checkModule(ctx, function, wasm); err != nil {
		return err
	}
	// A canary equal to the module a host was started with is simply not
	// used by that host; the disk here may hold a newer build than the
	// hosts serve, so it is not compared.
	v := canary.VersionOf(function, wasm)
	if _, err := store.Canary(ctx, function, wasm, share, bound); err != nil {
		return err
	}
	// The ledger has the bytes for every host; this host's copy saves it
	// the read.
	if err := canary.WriteModule(cfg.DataDir, v, wasm); err != nil {
		fmt.Fprintf(out, "warning: module not copied to %s: %v\n", canary.ModulePath(cfg.DataDir, v), err)
	}
	fmt.Fprintf(out, "canary %s for %s of callers; rolled back above %.2f%% errors after %d requests\n",
		v.Label(), canary.FormatPercent(share), 100*bound.MaxErrorRate, bound.MinSamples)
	fmt.Fprintf(out, "pin it with the header %s: canary; watch it with `gateway release status`\n", canary.HeaderPin)
	return nil
}

// checkModule compiles wasm as a host would, so a module that is not a
// gateway function, or speaks another ABI version, is refused here rather
// than by every host.
func checkModule(ctx context.Context, function string, wasm []byte) error {
	none := errors.New("not available while checking a module")
	eng, err := runtime.NewEngine(ctx, runtime.Options{}, runtime.Services{
		Ledger: func(context.Context, *abi.Batch) abi.BatchResult { return abi.BatchResult{Err: none.Error()} },
		Fetch: func(context.Context, *abi.FetchRequest) abi.FetchResponse {
			return abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: none.Error()}
		},
		AI: func(context.Context, *abi.AIRequest) abi.AIResponse {
			return abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: none.Error()}
		},
		Config: func(string) string { return "" },
		Log:    func(context.Context, string, string, *abi.LogRecord) {},
	})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	m, err := eng.Compile(ctx, function, wasm)
	if err != nil {
		return fmt.Errorf("not a usable function module: %w", err)
	}
	return m.Close(ctx)
}

// builtVersion is the module in GATEWAY_FUNCTIONS_DIR, or the zero Version.
func builtVersion(cfg *hostconfig.Config, function string) canary.Version {
	wasm, err := os.ReadFile(filepath.Join(cfg.FunctionsDir, function+".wasm"))
	if err != nil {
		return canary.Version{}
	}
	return canary.VersionOf(function, wasm)
}

func releaseStatus(ctx context.Context, cfg *hostconfig.Config, store *canary.Store, pos []string, out io.Writer) error {
	states, err := store.Load(ctx)
	if err != nil {
		return err
	}
	byName := map[string]canary.State{}
	for _, st := range states {
		byName[st.Function] = st
	}
	var names []string
	seen := map[string]bool{}
	for _, r := range routes.Table {
		if !seen[r.Function] && (len(pos) == 0 || pos[0] == r.Function) {
			seen[r.Function] = true
			names = append(names, r.Function)
		}
	}
	if len(names) == 0 {
		return routed(pos[0])
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FUNCTION\tSTABLE\tCANARY\tSHARE\tROLLBACK BOUND")
	for _, name := range names {
		st, ok := byName[name]
		if !ok {
			st = canary.State{Function: name, Bound: canary.DefaultBound}
		}
		stable := "(not built)"
		if st.StableSHA != "" {
			stable = canary.Version{Function: name, SHA256: st.StableSHA}.Label()
		} else if b := builtVersion(cfg, name); b.SHA256 != "" {
			stable = b.Label() + " (built)"
		}
		can, share := "-", "-"
		if st.CanarySHA != "" {
			can = canary.Version{Function: name, SHA256: st.CanarySHA}.Label()
			share = canary.FormatPercent(st.Share)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f%% after %d\n", name, stable, can, share, 100*st.Bound.MaxErrorRate, st.Bound.MinSamples)
	}
	tw.Flush()
	for _, name := range names {
		st, ok := byName[name]
		if !ok {
			continue
		}
		if st.RolledBackSHA != "" {
			fmt.Fprintf(out, "\n%s: last rollback %s at %s: %s\n", name,
				canary.Version{Function: name, SHA256: st.RolledBackSHA}.Label(),
				time.Unix(st.RolledBackAt, 0).UTC().Format(time.RFC3339), st.RollbackReason)
		}
		events, err := store.Events(ctx, name, 5)
		if err != nil {
			return err
		}
		for _, e := range events {
			fmt.Fprintf(out, "  %s  %-13s %s  %s\n", time.Unix(e.At, 0).UTC().Format(time.RFC3339), e.Action,
				canary.Version{Function: name, SHA256: e.SHA256}.Label(), e.Detail)
		}
	}
	printHostMetrics(cfg, names, out)
	return nil
}

// printHostMetrics adds the counters of the host on SERVICE_ADDR, when one
// answers: requests, errors and mean latency per version since it started.
// Other hosts of a fleet count their own; scrape each for the whole picture.
func printHostMetrics(cfg *hostconfig.Config, names []string, out io.Writer) {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + cfg.Addr + canary.MetricsPath + "?format=json")
	if err != nil {
		fmt.Fprintf(out, "\nno host answered on %s; per-version counters are at %s on each host\n", cfg.Addr, canary.MetricsPath)
		return
	}
	defer resp.Body.Close()
	var m struct{ Functions []canary.FunctionMetrics }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&m) != nil {
		fmt.Fprintf(out, "\nthe host on %s did not answer %s\n", cfg.Addr, canary.MetricsPath)
		return
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	fmt.Fprintf(out, "\ncounters of the host on %s since it started:\n", cfg.Addr)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tROLE\tREQUESTS\tERRORS\tERROR RATE\tMEAN LATENCY")
	for _, f := range m.Functions {
		if !want[f.Function] {
			continue
		}
		for _, v := range f.Versions {
			rate, mean := "-", "-"
			if v.Requests > 0 {
				rate = fmt.Sprintf("%.2f%%", 100*float64(v.Errors)/float64(v.Requests))
				mean = time.Duration(v.LatencySum / float64(v.Requests) * float64(time.Second)).Round(time.Microsecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", v.Version, v.Role, v.Requests, v.Errors, rate, mean)
		}
	}
	tw.Flush()
}
