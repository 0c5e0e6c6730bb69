package ledger

import (
	"context"
	"database/sql"

	"decisiongateway/shared/abi"
)

// runBatch runs the steps of one batch inside the caller's transaction. A
// step runs only when all its conditions hold against the steps before it;
// a skipped step stays the zero StepResult (Executed false, no rows). On an
// error it returns the index of the failing step.
func (e *Executor) runBatch(ctx context.Context, conn *sql.Conn, j *job) ([]abi.StepResult, int, error) {
	out := make([]abi.StepResult, len(j.steps))
	for i := range j.steps {
		st := &j.steps[i]
		if !holdsAll(st.When, out[:i]) {
			continue
		}
		e.ran()
		if err := runStep(ctx, conn, st, j.shapes[i], &out[i]); err != nil {
			return nil, i, err
		}
	}
	return out, 0, nil
}

func holdsAll(conds []abi.Cond, done []abi.StepResult) bool {
	for _, c := range conds {
		if !c.Holds(done) {
			return false
		}
	}
	return true
}

func runStep(ctx context.Context, conn *sql.Conn, st *abi.Statement, s shape, r *abi.StepResult) error {
	args, err := driverArgs(st.Args)
	if err != nil {
		return err
	}
	r.Executed = true
	if s.rows {
		rows, err := conn.QueryContext(ctx, st.SQL, args...)
		if err != nil {
			return err
		}
		r.Columns, r.Rows, err = collect(rows)
		if err != nil {
			return err
		}
		if s.returning {
			r.RowsAffected = int64(len(r.Rows))
		}
		return nil
	}
	res, err := conn.ExecContext(ctx, st.SQL, args...)
	if err != nil {
		return err
	}
	if r.RowsAffected, err = res.RowsAffected(); err != nil {
		return err
	}
	// SQLite's last insert rowid belongs to the connection and outlives the
	// statement that set it, so after an UPDATE or an INSERT that inserted
	// nothing it would name some earlier batch's row. Report it only for
	// an INSERT that inserted.
	if s.insert && r.RowsAffected > 0 {
		if r.LastInsertID, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return nil
}
