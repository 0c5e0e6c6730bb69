package canary

import (
	"context"
	"errors"
	"fmt"

	"decisiongateway/shared/abi"
)

// endCanary is the SET list that leaves a row without a canary.
const endCanary = `canary_sha = NULL, canary_bp = 0, canary_since = NULL, steps = '', step = 0, step_since = NULL, budget = -1, admitted = 0`

// ErrRefused is returned by Canary for a version that failed analysis
// before, unless the rollout is forced.
var ErrRefused = errors.New("refused")

// Canary starts a rollout of wasm as the function's canary: its first step
// serves Steps[0] of callers, admits at most Policy.MinSamples canary
// requests fleet-wide before it is judged, and the analysis moves it
// through the other steps to a promotion, or rolls it back. The module
// bytes go into the ledger with it, so every host can load them.
//
// Naming the current canary again replaces its plan and starts its first
// step anew (a new window); callers keep their buckets, so a ramp moves
// none of them off the canary. Naming the stable version is refused, and so
// is a version that failed analysis before, unless r.Force.
func (s *Store) Canary(ctx context.Context, function string, wasm []byte, r Rollout) (Version, error) {
	v := VersionOf(function, wasm)
	if len(r.Steps) == 0 {
		return v, errors.New("a rollout needs at least one step")
	}
	now := s.now()
	first := r.Steps[0].Share
	refused, refusedArgs := `NOT EXISTS (SELECT 1 FROM release_failures WHERE function = ? AND sha256 = ?)`, []abi.Value{abi.String(function), abi.String(v.SHA256)}
	if r.Force {
		refused, refusedArgs = `1`, nil
	}
	detail := fmt.Sprintf("plan %s; each step judged on %d requests: error rate within stable's + %.1f points, function time within %.2g times stable's; steps last at least %s",
		FormatSteps(r.Steps), r.Policy.MinSamples, 100*r.Policy.MaxErrorRate, r.Policy.MaxLatencyRatio, r.Pause)
	if r.Force {
		detail += "; forced"
	}
	steps, err := s.exec(ctx,
		abi.Statement{
			SQL: `INSERT INTO release_modules (function, sha256, wasm, size, created_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (function, sha256) DO NOTHING`,
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256), abi.Bytes(wasm), abi.Int64(int64(len(wasm))), abi.Int64(now.Unix())},
		},
		abi.Statement{
			SQL: `INSERT INTO releases (function, canary_sha, canary_bp, canary_since, max_error_rate, min_samples, max_latency_ratio,
    steps, step, step_since, pause_s, budget, admitted, verdict, generation, updated_at)
  SELECT ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, 0, '', 1, ? WHERE ` + refused + `
  ON CONFLICT (function) DO UPDATE SET
    canary_sha = excluded.canary_sha,
    canary_bp = excluded.canary_bp,
    canary_since = CASE WHEN releases.canary_sha IS excluded.canary_sha THEN releases.canary_since ELSE excluded.canary_since END,
    max_error_rate = excluded.max_error_rate,
    min_samples = excluded.min_samples,
    max_latency_ratio = excluded.max_latency_ratio,
    steps = excluded.steps, step = 0, step_since = MAX(excluded.step_since, COALESCE(releases.step_since, 0) + 1),
    pause_s = excluded.pause_s, budget = excluded.budget, admitted = 0, verdict = '',
    generation = releases.generation + 1,
    updated_at = excluded.updated_at
  WHERE releases.stable_sha IS NOT excluded.canary_sha`,
			Args: append([]abi.Value{abi.String(function), abi.String(v.SHA256), abi.Int64(int64(first)), abi.Int64(now.UnixMilli()),
				abi.Float64(r.Policy.MaxErrorRate), abi.Int64(r.Policy.MinSamples), abi.Float64(r.Policy.MaxLatencyRatio),
				abi.String(encodeSteps(r.Steps)), abi.Int64(now.UnixMilli()), abi.Int64(int64(r.Pause.Seconds())), abi.Int64(r.Policy.MinSamples),
				abi.Int64(now.Unix())}, refusedArgs...),
		},
		abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'canary', ?, ?, ?)",
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256), abi.String(detail), abi.Int64(now.Unix())},
			When: []abi.Cond{{Step: 1, Test: abi.Affected}},
		},
		abi.Statement{
			SQL:  "SELECT reason, failed_at FROM release_failures WHERE function = ? AND sha256 = ?",
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256)},
			When: []abi.Cond{{Step: 1, Test: abi.NotAffected}},
		},
	)
	if err != nil {
		return v, err
	}
	if steps[1].RowsAffected == 0 {
		if rows := steps[3].Rows; len(rows) > 0 {
			return v, fmt.Errorf("%s %w: it failed analysis before (%s); pass --force to try it again", v.Label(), ErrRefused, rows[0][0].AsString())
		}
		return v, fmt.Errorf("%s is already the stable version of %s", v.Label(), function)
	}
	return v, nil
}

// admit claims one of the current step's canary admissions. false means the
// step's sample is full until its verdict (or the step changed): the
// request goes to stable.
func (s *Store) admit(ctx context.Context, function, sha string, since int64) (bool, error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  `UPDATE releases SET admitted = admitted + 1 WHERE ` + stepIs + ` AND (budget < 0 OR admitted < budget)`,
		Args: []abi.Value{abi.String(function), abi.String(sha), abi.Int64(since)},
	})
	if err != nil {
		return false, err
	}
	return steps[0].RowsAffected > 0, nil
}

// nextStep moves the canary to its next step: a larger share, a new window
// and a fresh admission limit.
func (s *Store) nextStep(ctx context.Context, st State, detail string) error {
	now := s.now()
	next := st.Steps[st.Step+1].Share
	_, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET step = step + 1, canary_bp = ?, step_since = MAX(?, step_since + 1), budget = min_samples, admitted = 0,
    verdict = '', generation = generation + 1, updated_at = ? WHERE ` + stepIs,
			Args: append([]abi.Value{abi.Int64(int64(next)), abi.Int64(now.UnixMilli()), abi.Int64(now.Unix())}, stepArgs(st)...),
		},
		abi.Statement{
			SQL: "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'canary', ?, ?, ?)",
			Args: []abi.Value{abi.String(st.Function), abi.String(st.CanarySHA),
				abi.String(fmt.Sprintf("step %d/%d: %s; %s", st.Step+2, len(st.Steps), FormatPercent(next), detail)), abi.Int64(now.Unix())},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
	)
	return err
}

// promoteStep makes the judged canary stable.
func (s *Store) promoteStep(ctx context.Context, st State, detail string) error {
	now := s.now().Unix()
	_, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET previous_sha = stable_sha, stable_sha = canary_sha, ` + endCanary + `, verdict = ?,
    generation = generation + 1, updated_at = ? WHERE ` + stepIs,
			Args: append([]abi.Value{abi.String(detail), abi.Int64(now)}, stepArgs(st)...),
		},
		abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'promote', ?, ?, ?)",
			Args: []abi.Value{abi.String(st.Function), abi.String(st.CanarySHA), abi.String(detail), abi.Int64(now)},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
	)
	return err
}

// autoRollback ends a canary that failed analysis and remembers the version
// as failed, so it is not canaried again by mistake.
func (s *Store) autoRollback(ctx context.Context, st State, reason string) error {
	now := s.now().Unix()
	_, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET rolled_back_sha = canary_sha, rollback_reason = ?, rolled_back_at = ?, verdict = ?,
    ` + endCanary + `, generation = generation + 1, updated_at = ? WHERE ` + stepIs,
			Args: append([]abi.Value{abi.String(reason), abi.Int64(now), abi.String(reason), abi.Int64(now)}, stepArgs(st)...),
		},
		abi.Statement{
			SQL: `INSERT INTO release_failures (function, sha256, reason, failed_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (function, sha256) DO UPDATE SET reason = excluded.reason, failed_at = excluded.failed_at`,
			Args: []abi.Value{abi.String(st.Function), abi.String(st.CanarySHA), abi.String(reason), abi.Int64(now)},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
		abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'auto-rollback', ?, ?, ?)",
			Args: []abi.Value{abi.String(st.Function), abi.String(st.CanarySHA), abi.String(reason), abi.Int64(now)},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
	)
	return err
}

// Advance is the operator's gate: it moves the canary to its next step, or
// promotes it from its last, whatever the analysis says so far.
func (s *Store) Advance(ctx context.Context, function string) (State, error) {
	st, ok, err := s.Get(ctx, function)
	if err != nil {
		return st, err
	}
	if !ok || st.CanarySHA == "" {
		return st, fmt.Errorf("%s has no canary to advance: %w", function, ErrNothing)
	}
	if st.Step+1 < len(st.Steps) {
		err = s.nextStep(ctx, st, "operator: advance")
	} else {
		err = s.promoteStep(ctx, st, "operator: advance past the last step")
	}
	if err != nil {
		return st, err
	}
	after, _, err := s.Get(ctx, function)
	return after, err
}

// Failure is a version that failed analysis.
type Failure struct {
	Version Version
	Reason  string
	At      int64 // unix seconds
}

// Failures lists the function's versions that failed analysis, newest first.
func (s *Store) Failures(ctx context.Context, function string) ([]Failure, error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  "SELECT sha256, reason, failed_at FROM release_failures WHERE function = ? ORDER BY failed_at DESC, sha256",
		Args: []abi.Value{abi.String(function)},
	})
	if err != nil {
		return nil, err
	}
	var out []Failure
	for _, r := range steps[0].Rows {
		out = append(out, Failure{Version: Version{Function: function, SHA256: r[0].AsString()}, Reason: r[1].AsString(), At: r[2].AsInt()})
	}
	return out, nil
}

// VersionCounts is the fleet's counts of one version in one window
// (release_samples), for `gateway release status`.
type VersionCounts struct {
	Version Version
	Since   int64 // the step window (unix ms); 0: served without a canary
	Counts
}

// FleetCounts returns the fleet's counts of every version of function per
// step window, newest window first.
func (s *Store) FleetCounts(ctx context.Context, function string) ([]VersionCounts, error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL: `SELECT sha256, since, SUM(requests), SUM(errors), SUM(client_errors), SUM(upstream_errors), SUM(judged), SUM(fn_us), SUM(queue_us)
  FROM release_samples WHERE function = ? GROUP BY sha256, since ORDER BY since DESC, sha256`,
		Args: []abi.Value{abi.String(function)},
	})
	if err != nil {
		return nil, err
	}
	var out []VersionCounts
	for _, r := range steps[0].Rows {
		out = append(out, VersionCounts{Version: Version{Function: function, SHA256: r[0].AsString()}, Since: r[1].AsInt(), Counts: countsFrom(r[2:])})
	}
	return out, nil
}
