package canary

import (
	"context"
	"errors"
	"fmt"
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
// (schema/migrations/0003_releases.sql).
type State struct {
	Function    string
	StableSHA   string // "" means the module built into GATEWAY_FUNCTIONS_DIR
	PreviousSHA string // the stable before the last promotion; "" is the built module
	CanarySHA   string // "" means no canary
	Share       int    // the canary's share in basis points
	CanarySince int64  // unix ms the canary started serving
	Bound       Bound
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
	Action   string // canary, promote, rollback, auto-rollback
	SHA256   string
	Detail   string
	At       int64 // unix seconds
}

// ErrNothing is returned by Promote and Rollback when there is nothing to
// promote or roll back.
var ErrNothing = errors.New("nothing to do")

// Store reads and changes release state in the ledger.
type Store struct {
	ledger Ledger
	now    func() time.Time
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
  max_error_rate, min_samples, generation, rolled_back_sha, rollback_reason, rolled_back_at, updated_at`

func stateFrom(row []abi.Value) State {
	return State{
		Function:       row[0].AsString(),
		StableSHA:      row[1].AsString(),
		PreviousSHA:    row[2].AsString(),
		CanarySHA:      row[3].AsString(),
		Share:          int(row[4].AsInt()),
		CanarySince:    row[5].AsInt(),
		Bound:          Bound{MaxErrorRate: asFloat(row[6]), MinSamples: row[7].AsInt()},
		Generation:     row[8].AsInt(),
		RolledBackSHA:  row[9].AsString(),
		RollbackReason: row[10].AsString(),
		RolledBackAt:   row[11].AsInt(),
		UpdatedAt:      row[12].AsInt(),
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
		return State{Function: function, Bound: DefaultBound}, false, err
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

// Canary makes wasm the function's canary for share basis points of its
// callers, rolled back automatically past bound. The module bytes go into
// the ledger with it, so every host can load them. Naming the current
// canary again changes its share and bound but keeps its error window;
// naming the stable version is refused.
func (s *Store) Canary(ctx context.Context, function string, wasm []byte, share int, bound Bound) (Version, error) {
	v := VersionOf(function, wasm)
	now := s.now()
	steps, err := s.exec(ctx,
		abi.Statement{
			SQL: `INSERT INTO release_modules (function, sha256, wasm, size, created_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (function, sha256) DO NOTHING`,
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256), abi.Bytes(wasm), abi.Int64(int64(len(wasm))), abi.Int64(now.Unix())},
		},
		abi.Statement{
			SQL: `INSERT INTO releases (function, canary_sha, canary_bp, canary_since, max_error_rate, min_samples, generation, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, 1, ?)
  ON CONFLICT (function) DO UPDATE SET
    canary_sha = excluded.canary_sha,
    canary_bp = excluded.canary_bp,
    canary_since = CASE WHEN releases.canary_sha IS excluded.canary_sha THEN releases.canary_since ELSE excluded.canary_since END,
    max_error_rate = excluded.max_error_rate,
    min_samples = excluded.min_samples,
    generation = releases.generation + 1,
    updated_at = excluded.updated_at
  WHERE releases.stable_sha IS NOT excluded.canary_sha`,
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256), abi.Int64(int64(share)), abi.Int64(now.UnixMilli()),
				abi.Float64(bound.MaxErrorRate), abi.Int64(bound.MinSamples), abi.Int64(now.Unix())},
		},
		abi.Statement{
			SQL: "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'canary', ?, ?, ?)",
			Args: []abi.Value{abi.String(function), abi.String(v.SHA256),
				abi.String(fmt.Sprintf("%s of callers; roll back above %.2f%% errors after %d requests", FormatPercent(share), 100*bound.MaxErrorRate, bound.MinSamples)),
				abi.Int64(now.Unix())},
			When: []abi.Cond{{Step: 1, Test: abi.Affected}},
		},
	)
	if err != nil {
		return v, err
	}
	if steps[1].RowsAffected == 0 {
		return v, fmt.Errorf("%s is already the stable version of %s", v.Label(), function)
	}
	return v, nil
}

// Promote makes the canary the stable version and serves it to everyone.
// The stable version it replaces is kept, so Rollback can return to it.
func (s *Store) Promote(ctx context.Context, function string) (Version, error) {
	now := s.now().Unix()
	steps, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET previous_sha = stable_sha, stable_sha = canary_sha, canary_sha = NULL, canary_bp = 0,
    canary_since = NULL, generation = generation + 1, updated_at = ?
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
    canary_sha = NULL, canary_bp = 0, canary_since = NULL, generation = generation + 1, updated_at = ?
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

// AutoRollback records a host's automatic rollback. It changes the row only
// while the same canary, started at the same time, is still in it, so hosts
// that trip together write it once, and an operator's newer change wins.
func (s *Store) AutoRollback(ctx context.Context, rb Rollback) error {
	now := s.now().Unix()
	fn := rb.Canary.Function
	_, err := s.exec(ctx,
		abi.Statement{
			SQL: `UPDATE releases SET rolled_back_sha = canary_sha, rollback_reason = ?, rolled_back_at = ?,
    canary_sha = NULL, canary_bp = 0, canary_since = NULL, generation = generation + 1, updated_at = ?
  WHERE function = ? AND canary_sha = ? AND canary_since = ?`,
			Args: []abi.Value{abi.String(rb.Reason()), abi.Int64(now), abi.Int64(now), abi.String(fn), abi.String(rb.Canary.SHA256), abi.Int64(rb.Since)},
		},
		abi.Statement{
			SQL:  "INSERT INTO release_events (function, action, sha256, detail, created_at) VALUES (?, 'auto-rollback', ?, ?, ?)",
			Args: []abi.Value{abi.String(fn), abi.String(rb.Canary.SHA256), abi.String(rb.Reason()), abi.Int64(now)},
			When: []abi.Cond{{Step: 0, Test: abi.Affected}},
		},
	)
	return err
}

// Events returns the function's latest release events, newest first.
func (s *Store) Events(ctx context.Context, function string, limit int) ([]Event, error) {
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
