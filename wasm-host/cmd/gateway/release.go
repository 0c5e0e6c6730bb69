package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
  gateway release canary FUNCTION PATH.wasm STEPS [--min-samples N] [--max-error-rate R]
                         [--max-latency-ratio X] [--pause DURATION] [--force]
  gateway release advance FUNCTION
  gateway release promote FUNCTION
  gateway release rollback FUNCTION [--reason TEXT]
  gateway release analyze

Release state lives in the ledger (LIBSQL_URL); running hosts apply a change
within a few seconds, without a restart. STEPS is one share or a plan of
growing shares in percent, such as 1,10,50: the canary serves the first share
(sticky per account); each step is judged on N canary requests fleet-wide
(default 100) against the stable version over the same window, and passes
when its error rate is at most R above stable's (default 0.05) and its mean
function time at most X times stable's (default 1.5), after at least DURATION
(default 0s). A passed step moves to the next; after the last, the canary is
promoted. A failed step rolls the canary back, and the version is refused
by later canaries unless --force. Until a step is judged it admits at most N
canary requests across the fleet: a broken canary reaches at most N callers.
A share followed by ! (1,10!,50; quote it in a shell: '1,10!,50') waits after passing for
` + "`release advance`" + `, which also moves on any step by hand. Hosts analyse
every few seconds; ` + "`release analyze`" + ` runs one round now. Flags may come
before or after the arguments.
`

// release runs `gateway release …`, the operator side of wasm-host/canary.
// The whole command line is checked before the ledger is opened: a wrong
// one exits 2 (usageError) and touches nothing.
func release(args []string, out io.Writer) error {
	cmd, pos, flags, plan, err := releaseArgs(args)
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
	switch cmd {
	case "status":
		return releaseStatus(ctx, cfg, store, pos, out)
	case "canary":
		return releaseCanary(ctx, cfg, store, pos, plan, out)
	case "advance":
		st, err := store.Advance(ctx, pos[0])
		if err != nil {
			return err
		}
		if st.CanarySHA == "" {
			fmt.Fprintf(out, "promoted %s: it is the stable version for every caller\n", canary.Version{Function: st.Function, SHA256: st.StableSHA}.Label())
		} else {
			fmt.Fprintf(out, "%s: step %d/%d, %s of callers\n", canary.Version{Function: st.Function, SHA256: st.CanarySHA}.Label(), st.Step+1, len(st.Steps), canary.FormatPercent(st.Share))
		}
		return nil
	case "promote":
		v, err := store.Promote(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "promoted %s: it is the stable version for every caller\n", v.Label())
		return nil
	case "rollback":
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
	// analyze
	decisions, err := store.Analyze(ctx)
	for _, d := range decisions {
		fmt.Fprintf(out, "%s %s: %s\n", d.Canary.Label(), d.Action, d.Reason)
	}
	if err == nil && len(decisions) == 0 {
		fmt.Fprintln(out, "no canary to analyse")
	}
	return err
}

// releaseArgs checks a release command line: the subcommand, its number of
// arguments, the function (one the route table serves), the flags it takes
// and, for canary, the plan. Every error is a usageError.
func releaseArgs(args []string) (cmd string, pos []string, flags map[string]string, plan canary.Rollout, err error) {
	if pos, flags, err = splitFlags(args); err != nil {
		return "", nil, nil, plan, err
	}
	if len(pos) == 0 {
		return "", nil, nil, plan, wrong("release needs a subcommand")
	}
	cmd, pos = pos[0], pos[1:]
	sub, ok := releaseSubcommands[cmd]
	switch {
	case !ok:
		return "", nil, nil, plan, wrong("unknown release command %q", cmd)
	case len(pos) < sub.min || len(pos) > sub.max:
		return "", nil, nil, plan, wrong("release %s takes %s", cmd, sub.args)
	}
	for name := range flags {
		if !slices.Contains(sub.flags, name) {
			return "", nil, nil, plan, wrong("release %s takes no --%s", cmd, name)
		}
	}
	if len(pos) > 0 {
		if err := routed(pos[0]); err != nil {
			return "", nil, nil, plan, wrong("%v", err)
		}
	}
	if cmd == "canary" {
		if plan, err = rolloutFlags(pos[2], flags); err != nil {
			return "", nil, nil, plan, wrong("%v", err)
		}
	}
	return cmd, pos, flags, plan, nil
}

// releaseSubcommands is each subcommand's command line: the least and
// most positional arguments, how its usage names them, and the flags it
// takes.
var releaseSubcommands = map[string]struct {
	min, max int
	args     string
	flags    []string
}{
	"status":   {0, 1, "at most a FUNCTION", nil},
	"canary":   {3, 3, "FUNCTION PATH.wasm STEPS", []string{"max-error-rate", "min-samples", "max-latency-ratio", "pause", "force"}},
	"advance":  {1, 1, "a FUNCTION", nil},
	"promote":  {1, 1, "a FUNCTION", nil},
	"rollback": {1, 1, "a FUNCTION", []string{"reason"}},
	"analyze":  {0, 0, "no arguments", nil},
}

// releaseFlags are the flags `gateway release` knows; true for those that
// take a value.
var releaseFlags = map[string]bool{
	"max-error-rate": true, "min-samples": true, "max-latency-ratio": true, "pause": true, "reason": true, "force": false,
}

// splitFlags separates flags (-name or --name, with VALUE or =VALUE when
// they take one), which may come anywhere, from positional arguments. An
// unknown flag is refused by name rather than read as an argument.
func splitFlags(args []string) ([]string, map[string]string, error) {
	var pos []string
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9') {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, known := releaseFlags[name]
		switch {
		case !known:
			return nil, nil, wrong("unknown flag %s", a)
		case !takes && hasValue:
			return nil, nil, wrong("flag --%s takes no value", name)
		case !takes:
			value = "true"
		case !hasValue && i+1 >= len(args):
			return nil, nil, wrong("flag --%s needs a value", name)
		case !hasValue:
			i++
			value = args[i]
		}
		flags[name] = value
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

// rolloutFlags reads a rollout's plan and policy from the arguments.
func rolloutFlags(stepsArg string, flags map[string]string) (canary.Rollout, error) {
	r := canary.Rollout{Policy: canary.DefaultPolicy, Force: flags["force"] == "true"}
	var err error
	if r.Steps, err = canary.ParseSteps(stepsArg); err != nil {
		return r, fmt.Errorf("STEPS %q: %w", stepsArg, err)
	}
	fraction := func(name string, dst *float64, ok func(float64) bool, want string) error {
		v, set := flags[name]
		if !set {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !ok(f) {
			return fmt.Errorf("--%s %q: want %s", name, v, want)
		}
		*dst = f
		return nil
	}
	if err := fraction("max-error-rate", &r.Policy.MaxErrorRate, func(f float64) bool { return f >= 0 && f <= 1 }, "a fraction from 0 to 1, such as 0.05"); err != nil {
		return r, err
	}
	if err := fraction("max-latency-ratio", &r.Policy.MaxLatencyRatio, func(f float64) bool { return f >= 1 }, "a ratio of at least 1, such as 1.5"); err != nil {
		return r, err
	}
	if v, ok := flags["min-samples"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return r, fmt.Errorf("--min-samples %q: want a whole number ≥ 1", v)
		}
		r.Policy.MinSamples = n
	}
	if v, ok := flags["pause"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return r, fmt.Errorf("--pause %q: want a duration such as 5m", v)
		}
		r.Pause = d
	}
	return r, nil
}

func releaseCanary(ctx context.Context, cfg *hostconfig.Config, store *canary.Store, pos []string, r canary.Rollout, out io.Writer) error {
	function, path := pos[0], pos[1]
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
	if _, err := store.Canary(ctx, function, wasm, r); err != nil {
		return err
	}
	// The ledger has the bytes for every host; this host's copy saves it
	// the read.
	if err := canary.WriteModule(cfg.DataDir, v, wasm); err != nil {
		fmt.Fprintf(out, "warning: module not copied to %s: %v\n", canary.ModulePath(cfg.DataDir, v), err)
	}
	fmt.Fprintf(out, "canary %s: plan %s; each step judged on %d requests fleet-wide (errors within stable's + %.1f points, function time within %.2g times stable's)\n",
		v.Label(), canary.FormatSteps(r.Steps), r.Policy.MinSamples, 100*r.Policy.MaxErrorRate, r.Policy.MaxLatencyRatio)
	fmt.Fprintf(out, "pin it with the header %s: canary; watch it with `gateway release status %s`\n", canary.HeaderPin, function)
	return nil
}

// checkModule refuses a module that is not function (canary.CheckFunction:
// every function speaks the same ABI, so another's module would load and
// answer), and compiles wasm as a host would, so a module that is not a
// gateway function, or speaks another ABI version, is refused here rather
// than by every host.
func checkModule(ctx context.Context, function string, wasm []byte) error {
	if err := canary.CheckFunction(function, wasm); err != nil {
		return err
	}
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
	fmt.Fprintln(tw, "FUNCTION\tSTABLE\tCANARY\tSTEP\tSHARE\tPLAN")
	for _, name := range names {
		st, ok := byName[name]
		if !ok {
			st = canary.State{Function: name, Policy: canary.DefaultPolicy}
		}
		stable := "(not built)"
		if st.StableSHA != "" {
			stable = canary.Version{Function: name, SHA256: st.StableSHA}.Label()
		} else if b := builtVersion(cfg, name); b.SHA256 != "" {
			stable = b.Label() + " (built)"
		}
		can, step, share, plan := "-", "-", "-", "-"
		if st.CanarySHA != "" {
			can = canary.Version{Function: name, SHA256: st.CanarySHA}.Label()
			step = fmt.Sprintf("%d/%d", st.Step+1, len(st.Steps))
			share = canary.FormatPercent(st.Share)
			plan = canary.FormatSteps(st.Steps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, stable, can, step, share, plan)
	}
	tw.Flush()
	for _, name := range names {
		if st, ok := byName[name]; ok {
			if err := functionStatus(ctx, store, st, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionStatus prints one released function: the current step and its
// analysis, the fleet's counts per version and step window, the versions
// that failed analysis, and the whole history with the reason of every
// automatic decision.
func functionStatus(ctx context.Context, store *canary.Store, st canary.State, out io.Writer) error {
	name := st.Function
	label := func(sha string) string { return canary.Version{Function: name, SHA256: sha}.Label() }
	fmt.Fprintf(out, "\n%s\n", name)
	if st.CanarySHA != "" {
		admitted := "no admission limit (sample judged)"
		if st.Budget >= 0 {
			admitted = fmt.Sprintf("%d of %d canary admissions used before the verdict", st.Admitted, st.Budget)
		}
		fmt.Fprintf(out, "  step %d/%d since %s; %s\n  policy: %d requests per step, errors within stable's + %.1f points, function time within %.2g times stable's, steps last at least %s\n",
			st.Step+1, len(st.Steps), stamp(st.StepSince/1000), admitted, st.Policy.MinSamples, 100*st.Policy.MaxErrorRate, st.Policy.MaxLatencyRatio, st.Pause)
	}
	if st.Verdict != "" {
		fmt.Fprintf(out, "  latest analysis: %s\n", st.Verdict)
	}
	counts, err := store.FleetCounts(ctx, name)
	if err != nil {
		return err
	}
	if len(counts) > 0 {
		fmt.Fprintln(out, "  fleet counts (every host, from the ledger), per step window:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  WINDOW\tVERSION\tREQUESTS\tERRORS\t4XX\tUPSTREAM 5XX\tERROR RATE\tMEAN FUNCTION TIME\tMEAN QUEUE WAIT")
		for _, c := range counts {
			window := "no canary"
			if c.Since != 0 {
				window = "step from " + time.UnixMilli(c.Since).UTC().Format("2006-01-02T15:04:05.000Z")
				if c.Since == st.StepSince && st.CanarySHA != "" {
					window += " (current)"
				}
			}
			queue := time.Duration(0)
			if c.Requests > 0 {
				queue = c.QueueTime / time.Duration(c.Requests)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%.2f%%\t%s\t%s\n", window, c.Version.Label(), c.Requests, c.Errors, c.ClientErrors,
				c.UpstreamErrors, 100*c.ErrorRate(), c.MeanTime().Round(time.Microsecond), queue.Round(time.Microsecond))
		}
		tw.Flush()
	}
	failures, err := store.Failures(ctx, name)
	if err != nil {
		return err
	}
	for _, f := range failures {
		fmt.Fprintf(out, "  failed analysis, refused unless --force: %s at %s: %s\n", f.Version.Label(), stamp(f.At), f.Reason)
	}
	events, err := store.Events(ctx, name, 0)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "  history:")
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		fmt.Fprintf(out, "  %s  %-13s %s  %s\n", stamp(e.At), e.Action, label(e.SHA256), e.Detail)
	}
	return nil
}

func stamp(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }
