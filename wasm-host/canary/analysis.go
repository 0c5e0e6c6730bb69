package canary

import (
	"context"
	"fmt"
	"time"

	"decisiongateway/shared/abi"
)

// Counts are one version's outcomes over a window, added up across the
// fleet from release_samples.
//
// What counts (README, "Rollouts and analysis"):
//   - Errors: 5xx answers of the function or the platform, traps and
//     timeouts. They are the canary's fault.
//   - ClientErrors: 4xx answers. A 4xx is the caller's mistake as much as
//     the function's, so it is neither good nor bad: it is left out of the
//     error rate's denominator, where cheap invalid requests would
//     otherwise dilute a canary's failures. A canary that refuses far more
//     than stable does fails on its own rule (clientDrift).
//   - UpstreamErrors: 5xx the function blamed on its upstream; the same
//     for both versions, so out of the rate too.
//   - Judged: the requests the error rate and the latency are computed
//     over: Requests minus the three kinds above and the requests their
//     clients abandoned.
//
// Latency is the function's own time (FunctionTime over Judged), without
// the wait for a free instance: each version has its own pool, and a
// smaller, less loaded canary pool would make identical code look faster.
type Counts struct {
	Requests, Errors, ClientErrors, UpstreamErrors, Judged int64
	FunctionTime, QueueTime                                time.Duration
}

// ErrorRate is Errors over Judged (0 with nothing judged).
func (c Counts) ErrorRate() float64 {
	if c.Judged == 0 {
		return 0
	}
	return float64(c.Errors) / float64(c.Judged)
}

// MeanTime is the mean function time of a judged request.
func (c Counts) MeanTime() time.Duration {
	if c.Judged == 0 {
		return 0
	}
	return c.FunctionTime / time.Duration(c.Judged)
}

func (c Counts) clientRate() float64 {
	if c.Requests == 0 {
		return 0
	}
	return float64(c.ClientErrors) / float64(c.Requests)
}

func (c Counts) String() string {
	return fmt.Sprintf("%d requests, %d errors of %d judged (%.1f%%), %d 4xx, mean %s",
		c.Requests, c.Errors, c.Judged, 100*c.ErrorRate(), c.ClientErrors, c.MeanTime().Round(time.Microsecond))
}

// Tunables of the analysis that are not per release.
const (
	// minBaseline is how many judged stable requests the latency and 4xx
	// comparisons need; with fewer, the step is inconclusive.
	minBaseline = 20
	// latencySlack is a difference in mean function time too small to
	// judge: sub-millisecond functions vary by more than any ratio.
	latencySlack = 5 * time.Millisecond
	// clientDrift is how far the canary's share of 4xx answers may exceed
	// stable's: a canary that refuses valid requests fails.
	clientDrift = 0.25
)

// verdict is the analysis of one step.
type verdict struct {
	kind   verdictKind
	reason string
}

type verdictKind uint8

const (
	inconclusive verdictKind = iota // not enough data yet: keep the step
	passed                          // the sample is complete and good
	fail                            // roll back
)

// judge compares the canary's counts with stable's over the same step.
// A failure that the rest of the sample cannot undo is declared early:
// more errors than the bound allows over the whole sample.
func judge(c, s Counts, p Policy) verdict {
	limit := s.ErrorRate() + p.MaxErrorRate
	n := max(p.MinSamples, 1)
	switch {
	case float64(c.Errors) > limit*float64(n):
		return verdict{fail, fmt.Sprintf("error rate: %d errors already exceed %.1f%% of the %d-request sample (stable %.1f%% + %.1f points)",
			c.Errors, 100*limit, n, 100*s.ErrorRate(), 100*p.MaxErrorRate)}
	case c.Requests < n:
		return verdict{inconclusive, fmt.Sprintf("inconclusive: %d of %d canary requests", c.Requests, n)}
	case c.Judged > 0 && c.ErrorRate() > limit:
		return verdict{fail, fmt.Sprintf("error rate %.1f%% (%d/%d) above stable's %.1f%% + %.1f points",
			100*c.ErrorRate(), c.Errors, c.Judged, 100*s.ErrorRate(), 100*p.MaxErrorRate)}
	case s.Requests < minBaseline:
		return verdict{inconclusive, fmt.Sprintf("inconclusive: stable served %d of the %d requests a comparison needs", s.Requests, minBaseline)}
	case c.clientRate() > s.clientRate()+clientDrift:
		return verdict{fail, fmt.Sprintf("4xx share %.1f%% against stable's %.1f%%", 100*c.clientRate(), 100*s.clientRate())}
	case c.Judged == 0 || s.Judged < minBaseline:
		return verdict{inconclusive, fmt.Sprintf("inconclusive: %d canary and %d stable requests judged", c.Judged, s.Judged)}
	case c.MeanTime() > time.Duration(p.MaxLatencyRatio*float64(s.MeanTime())) && c.MeanTime()-s.MeanTime() > latencySlack:
		return verdict{fail, fmt.Sprintf("latency: mean function time %s against stable's %s (more than %.2g times)",
			c.MeanTime().Round(time.Microsecond), s.MeanTime().Round(time.Microsecond), p.MaxLatencyRatio)}
	}
	return verdict{passed, fmt.Sprintf("passed: canary %s; stable %s", c, s)}
}

// StepCounts returns the fleet's counts of the canary and of the stable
// version(s) for the step that started at since (unix ms).
func (s *Store) StepCounts(ctx context.Context, function, canarySHA string, since int64) (canary, stable Counts, err error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL: `SELECT sha256 = ?, SUM(requests), SUM(errors), SUM(client_errors), SUM(upstream_errors), SUM(judged), SUM(fn_us), SUM(queue_us)
  FROM release_samples WHERE function = ? AND since = ? GROUP BY sha256 = ?`,
		Args: []abi.Value{abi.String(canarySHA), abi.String(function), abi.Int64(since), abi.String(canarySHA)},
	})
	if err != nil {
		return Counts{}, Counts{}, err
	}
	for _, r := range steps[0].Rows {
		c := countsFrom(r[1:])
		if r[0].Truthy() {
			canary = c
		} else {
			stable = c
		}
	}
	return canary, stable, nil
}

func countsFrom(r []abi.Value) Counts {
	return Counts{Requests: r[0].AsInt(), Errors: r[1].AsInt(), ClientErrors: r[2].AsInt(), UpstreamErrors: r[3].AsInt(),
		Judged: r[4].AsInt(), FunctionTime: time.Duration(r[5].AsInt()) * time.Microsecond, QueueTime: time.Duration(r[6].AsInt()) * time.Microsecond}
}

// Decision is what one analysis tick did to one function's canary.
type Decision struct {
	Function string
	Canary   Version
	Action   string // "wait", "hold" (sample passed; pause or gate), "step", "promote", "rollback"
	Reason   string
}

// Analyze judges every function's current canary step on the fleet's
// counts and acts: rolls a failed canary back (and remembers the version as
// failed), moves a passed one to its next step or promotes it after the
// last, lifts the admission limit of a step whose sample passed while it
// waits for its pause or its gate, and records an inconclusive verdict.
// Every change is conditional on the step it judged, so hosts analysing at
// once act once. Hosts call it on every poll; tests call it to drive ticks.
func (s *Store) Analyze(ctx context.Context) ([]Decision, error) {
	if err := s.prune(ctx); err != nil {
		return nil, fmt.Errorf("release samples not pruned: %w", err)
	}
	states, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	var out []Decision
	for _, st := range states {
		if st.CanarySHA == "" {
			continue
		}
		d, err := s.analyzeOne(ctx, st)
		if err != nil {
			return out, fmt.Errorf("%s: %w", st.Function, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (s *Store) analyzeOne(ctx context.Context, st State) (Decision, error) {
	v := Version{Function: st.Function, SHA256: st.CanarySHA}
	c, stable, err := s.StepCounts(ctx, st.Function, st.CanarySHA, st.StepSince)
	if err != nil {
		return Decision{}, err
	}
	vd := judge(c, stable, st.Policy)
	steps := st.Steps
	label := fmt.Sprintf("step %d/%d (%s)", st.Step+1, len(steps), FormatPercent(st.Share))
	d := Decision{Function: st.Function, Canary: v, Reason: label + ": " + vd.reason}
	now := s.now()
	switch {
	case vd.kind == fail:
		d.Action = "rollback"
		return d, s.autoRollback(ctx, st, d.Reason)
	case vd.kind == inconclusive:
		d.Action = "wait"
		return d, s.note(ctx, st, d.Reason, false)
	case now.Sub(time.UnixMilli(st.StepSince)) < st.Pause:
		d.Action, d.Reason = "hold", d.Reason+fmt.Sprintf("; the step lasts at least %s", st.Pause)
		return d, s.note(ctx, st, d.Reason, true)
	case st.Step < len(steps) && steps[st.Step].Gate:
		d.Action, d.Reason = "hold", d.Reason+"; waiting for `gateway release advance "+st.Function+"`"
		return d, s.note(ctx, st, d.Reason, true)
	case st.Step+1 < len(steps):
		d.Action = "step"
		return d, s.nextStep(ctx, st, "automatic: "+d.Reason)
	}
	d.Action = "promote"
	return d, s.promoteStep(ctx, st, "automatic: "+d.Reason)
}

// Samples are kept for sampleRetention, so `release status` shows a week of
// windows; each process that analyses prunes older ones at most once per
// pruneEvery.
const (
	sampleRetention = 7 * 24 * time.Hour
	pruneEvery      = time.Hour
)

func (s *Store) prune(ctx context.Context) error {
	now := s.now()
	if last := s.pruned.Load(); last != 0 && now.Sub(time.Unix(last, 0)) < pruneEvery {
		return nil
	}
	s.pruned.Store(now.Unix())
	_, err := s.exec(ctx, abi.Statement{SQL: "DELETE FROM release_samples WHERE at < ?", Args: []abi.Value{abi.Int64(now.Add(-sampleRetention).Unix())}})
	return err
}

// stepIs is the condition every analysis write carries: the row still holds
// the canary and step that were judged.
const stepIs = `function = ? AND canary_sha = ? AND step_since = ?`

func stepArgs(st State) []abi.Value {
	return []abi.Value{abi.String(st.Function), abi.String(st.CanarySHA), abi.Int64(st.StepSince)}
}

// note records an undecided verdict. lift, once a step's sample passed,
// removes its admission limit (bumping the generation so hosts see it):
// the canary keeps serving its whole share, judged continuously, while it
// waits for its pause or its gate.
func (s *Store) note(ctx context.Context, st State, reason string, lift bool) error {
	if !lift || st.Budget < 0 {
		if reason == st.Verdict {
			return nil
		}
		_, err := s.exec(ctx, abi.Statement{SQL: `UPDATE releases SET verdict = ? WHERE ` + stepIs,
			Args: append([]abi.Value{abi.String(reason)}, stepArgs(st)...)})
		return err
	}
	_, err := s.exec(ctx, abi.Statement{
		SQL:  `UPDATE releases SET verdict = ?, budget = -1, generation = generation + 1, updated_at = ? WHERE ` + stepIs,
		Args: append([]abi.Value{abi.String(reason), abi.Int64(s.now().Unix())}, stepArgs(st)...),
	})
	return err
}
