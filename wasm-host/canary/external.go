package canary

import (
	"context"
	"fmt"

	"decisiongateway/shared/abi"
)

// The analysis for rollouts the hosts do not route themselves: on Workers,
// Cloudflare splits the traffic, the function Workers count their outcomes
// into release_samples (since 0, in time buckets), and `workers release
// watch` judges them here and changes the deployment. The judgement is the
// hosts' own (judge), so a version passes or fails by the same rules on
// both platforms, and a version that failed on one is refused on both.

// Judgement is the verdict of one analysis: "pass", "fail" or
// "inconclusive", with its reason.
type Judgement struct {
	Verdict string
	Reason  string
}

// Judge compares a canary's counts with stable's over the same window.
func Judge(canary, stable Counts, p Policy) Judgement {
	v := judge(canary, stable, p)
	return Judgement{Verdict: [...]string{inconclusive: "inconclusive", passed: "pass", fail: "fail"}[v.kind], Reason: v.reason}
}

// WindowCounts returns the fleet's counts of function since fromUnix: the
// canary's (the version whose SHA-256 starts with canaryPrefix, whole hash
// returned) and every other version's, as stable.
func (s *Store) WindowCounts(ctx context.Context, function, canaryPrefix string, fromUnix int64) (canary, stable Counts, canarySHA string, err error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL: `SELECT substr(sha256, 1, ?) = ?, MAX(sha256), SUM(requests), SUM(errors), SUM(client_errors), SUM(upstream_errors), SUM(judged), SUM(fn_us), SUM(queue_us)
  FROM release_samples WHERE function = ? AND at >= ? GROUP BY 1`,
		Args: []abi.Value{abi.Int64(int64(len(canaryPrefix))), abi.String(canaryPrefix), abi.String(function), abi.Int64(fromUnix)},
	})
	if err != nil {
		return Counts{}, Counts{}, "", err
	}
	for _, r := range steps[0].Rows {
		if r[0].Truthy() {
			canary, canarySHA = countsFrom(r[2:]), r[1].AsString()
		} else {
			stable = countsFrom(r[2:])
		}
	}
	return canary, stable, canarySHA, nil
}

// RecordDecision writes an automatic decision taken outside the hosts to
// the history (action canary, promote or auto-rollback) and, for a
// rollback, remembers the version as failed.
func (s *Store) RecordDecision(ctx context.Context, v Version, action, detail string) error {
	now := s.now().Unix()
	steps := []abi.Statement{{
		SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, ?, ?, ?, ?)",
		Args: []abi.Value{abi.String(v.Function), abi.String(action), abi.String(v.SHA256), abi.String(detail), abi.Int64(now)},
	}}
	if action == "auto-rollback" {
		steps = append(steps, abi.Statement{
			SQL: `INSERT INTO release_failures (function, sha256, reason, failed_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (function, sha256) DO UPDATE SET reason = excluded.reason, failed_at = excluded.failed_at`,
			Args: []abi.Value{abi.String(v.Function), abi.String(v.SHA256), abi.String(detail), abi.Int64(now)},
		})
	}
	_, err := s.exec(ctx, steps...)
	return err
}

// CheckNotFailed returns an ErrRefused error when v failed analysis before.
func (s *Store) CheckNotFailed(ctx context.Context, v Version) error {
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  "SELECT reason FROM release_failures WHERE function = ? AND sha256 = ?",
		Args: []abi.Value{abi.String(v.Function), abi.String(v.SHA256)},
	})
	if err != nil {
		return err
	}
	if rows := steps[0].Rows; len(rows) > 0 {
		return fmt.Errorf("%s %w: it failed analysis before (%s); pass -force to try it again", v.Label(), ErrRefused, rows[0][0].AsString())
	}
	return nil
}
