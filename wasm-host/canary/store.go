package canary

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
)

// Ledger runs one batch atomically, as *ledger.Executor does. Release state
// goes through the same executor as the functions' batches, so it works on
// every backend the host supports (embedded file, sqld, Turso).
type Ledger interface {
	Exec(ctx context.Context, b *abi.Batch) abi.BatchResult
}

// State is the desired release of one function: a row of table releases
// (schema/migrations/0003_releases.sql and 0004_release_rollouts.sql).
type State struct {
	Function    string
	StableSHA   string // "" means the module built into GATEWAY_FUNCTIONS_DIR
	PreviousSHA string // the stable before the last promotion; "" is the built module
	CanarySHA   string // "" means no canary
	Share       int    // the canary's share in basis points: its current step's
	CanarySince int64  // unix ms the canary started serving
	Policy      Policy
	// The rollout: its plan, the current step (an index into Steps), when
	// that step started (unix ms; the analysis window), its least length,
	// and the step's admission limit (-1: none) and admissions so far.
	Steps     []Step
	Step      int
	StepSince int64
	Pause     time.Duration
	Budget    int64
	Admitted  int64
	Verdict   string // the latest analysis, in words
	// Generation moves on every change; a host applies a row whose
	// generation differs from the one it applied last.
	Generation     int64
	RolledBackSHA  string
	RollbackReason string
	RolledBackAt   int64 // unix seconds
	UpdatedAt      int64 // unix seconds
}

// Event is one line of a function's release history.
type Event struct {
	ID       int64
	Function string
	Action   string // canary (a rollout or one of its steps), promote, rollback, auto-rollback
	SHA256   string
	Detail   string // for automatic decisions, the analysis that made them
	At       int64  // unix seconds
}

// ErrNothing is returned by Promote and Rollback when there is nothing to
// promote or roll back.
var ErrNothing = errors.New("nothing to do")

// Store reads and changes release state in the ledger.
type Store struct {
	ledger Ledger
	now    func() time.Time
	pruned atomic.Int64 // unix seconds of the last sample pruning (analysis.go)
}

// NewStore returns a Store on l.
func NewStore(l Ledger) *Store { return &Store{ledger: l, now: time.Now} }

func (s *Store) exec(ctx context.Context, steps ...abi.Statement) ([]abi.StepResult, error) {
	res := s.ledger.Exec(ctx, &abi.Batch{Steps: steps})
	if res.Err != "" {
		return nil, errors.New(res.Err)
	}
	return res.Steps, nil
}

const stateColumns = `function, stable_sha, previous_sha, canary_sha, canary_bp, canary_since,
  max_error_rate, min_samples, generation, rolled_back_sha, rollback_reason, rolled_back_at, updated_at,
  steps, step, step_since, pause_s, max_latency_ratio, budget, admitted, verdict`

func stateFrom(row []abi.Value) State {
	share := int(row[4].AsInt())
	return State{
		Function:       row[0].AsString(),
		StableSHA:      row[1].AsString(),
		PreviousSHA:    row[2].AsString(),
		CanarySHA:      row[3].AsString(),
		Share:          share,
		CanarySince:    row[5].AsInt(),
		Policy:         Policy{MaxErrorRate: asFloat(row[6]), MinSamples: row[7].AsInt(), MaxLatencyRatio: asFloat(row[17])},
		Generation:     row[8].AsInt(),
		RolledBackSHA:  row[9].AsString(),
		RollbackReason: row[10].AsString(),
		RolledBackAt:   row[11].AsInt(),
		UpdatedAt:      row[12].AsInt(),
		Steps:          decodeSteps(row[13].AsString(), share),
		Step:           int(row[14].AsInt()),
		StepSince:      row[15].AsInt(),
		Pause:          time.Duration(row[16].AsInt()) * time.Second,
		Budget:         row[18].AsInt(),
		Admitted:       row[19].AsInt(),
		Verdict:        row[20].AsString(),
	}
}

func asFloat(v abi.Value) float64 {
	if v.Kind == abi.Float {
		return v.Float
	}
	return float64(v.AsInt())
}

// Load returns every function's release state, by function name.
func (s *Store) Load(ctx context.Context) ([]State, error) {
	steps, err := s.exec(ctx, abi.Statement{SQL: "SELECT " + stateColumns + " FROM releases ORDER BY function"})
	if err != nil {
		return nil, fmt.Errorf("releases: %w", err)
	}
	out := make([]State, 0, len(steps[0].Rows))
	for _, row := range steps[0].Rows {
		out = append(out, stateFrom(row))
	}
	return out, nil
}

// Get returns one function's state; ok is false when it was never released.
func (s *Store) Get(ctx context.Context, function string) (st State, ok bool, err error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  "SELECT " + stateColumns + " FROM releases WHERE function = ?",
		Args: []abi.Value{abi.String(function)},
	})
	if err != nil || len(steps[0].Rows) == 0 {
		return State{Function: function, Policy: DefaultPolicy}, false, err
	}
	return stateFrom(steps[0].Rows[0]), true, nil
}

// Module returns the bytes of a released version.
func (s *Store) Module(ctx context.Context, v Version) ([]byte, error) {
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  "SELECT wasm FROM release_modules WHERE function = ? AND sha256 = ?",
		Args: []abi.Value{abi.String(v.Function), abi.String(v.SHA256)},
	})
	if err != nil {
		return nil, err
	}
	if len(steps[0].Rows) == 0 {
		return nil, fmt.Errorf("release module %s is not in the ledger", v.Label())
	}
	return steps[0].Rows[0][0].Bytes, nil
}

// Promote makes the canary the stable version and serves it to everyone.
// The stable version it replaces is kept, so Rollback can return to it.
func (s *Store) Promote(ctx context.Context, function string) (Version, error) {
	now := s.now().Unix()
	steps, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET previous_sha = stable_sha, stable_sha = canary_sha, ` + endCanary + `, verdict = '', generation = generation + 1, updated_at = ?
  WHERE function = ? AND canary_sha IS NOT NULL RETURNING stable_sha`,
			Args: []abi.Value{abi.Int64(now), abi.String(function)},
		},
		abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, created_at) SELECT function, 'promote', stable_sha, ? FROM releases WHERE function = ?",
			Args: []abi.Value{abi.Int64(now), abi.String(function)},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
	)
	if err != nil {
		return Version{}, err
	}
	if steps[0].RowsAffected == 0 {
		return Version{}, fmt.Errorf("%s has no canary to promote: %w", function, ErrNothing)
	}
	return Version{Function: function, SHA256: steps[0].First().AsString()}, nil
}

// Rollback ends the function's canary; with no canary, it undoes the last
// promotion (the stable version before it serves again). It reports which
// of the two it did ("canary" or "promotion") and the version it removed.
func (s *Store) Rollback(ctx context.Context, function, reason string) (string, Version, error) {
	now := s.now().Unix()
	event := func(after int, detail string) abi.Statement {
		return abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) SELECT function, 'rollback', rolled_back_sha, ?, ? FROM releases WHERE function = ?",
			Args: []abi.Value{abi.String(detail), abi.Int64(now), abi.String(function)},
			When: []abi.Cond{{Step: after, Test: abi.Affected}},
		}
	}
	steps, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET rolled_back_sha = canary_sha, rollback_reason = ?, rolled_back_at = ?,
    ` + endCanary + `, verdict = '', generation = generation + 1, updated_at = ?
  WHERE function = ? AND canary_sha IS NOT NULL RETURNING rolled_back_sha`,
			Args: []abi.Value{abi.String(reason), abi.Int64(now), abi.Int64(now), abi.String(function)},
		},
		event(0, "canary: "+reason),
		abi.Statement{
			SQL: `UPDATE releases SET rolled_back_sha = stable_sha, rollback_reason = ?, rolled_back_at = ?,
    stable_sha = previous_sha, previous_sha = NULL, generation = generation + 1, updated_at = ?
  WHERE function = ? AND stable_sha IS NOT NULL RETURNING rolled_back_sha`,
			Args: []abi.Value{abi.String(reason), abi.Int64(now), abi.Int64(now), abi.String(function)},
			When: []abi.Cond{{Step: 0, Test: abi.NotAffected}},
		},
		event(2, "promotion: "+reason),
	)
	if err != nil {
		return "", Version{}, err
	}
	switch {
	case steps[0].RowsAffected > 0:
		return "canary", Version{Function: function, SHA256: steps[0].First().AsString()}, nil
	case steps[2].RowsAffected > 0:
		return "promotion", Version{Function: function, SHA256: steps[2].First().AsString()}, nil
	}
	return "", Version{}, fmt.Errorf("%s has no canary and no promotion to roll back: %w", function, ErrNothing)
}

// Events returns the function's latest release events, newest first; all
// of them when limit is 0.
func (s *Store) Events(ctx context.Context, function string, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	steps, err := s.exec(ctx, abi.Statement{
		SQL:  "SELECT id, function, action, sha256, detail, created_at FROM release_events WHERE function = ? ORDER BY id DESC LIMIT ?",
		Args: []abi.Value{abi.String(function), abi.Int64(int64(limit))},
	})
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, r := range steps[0].Rows {
		out = append(out, Event{ID: r[0].AsInt(), Function: r[1].AsString(), Action: r[2].AsString(), SHA256: r[3].AsString(), Detail: r[4].AsString(), At: r[5].AsInt()})
	}
	return out, nil
}
