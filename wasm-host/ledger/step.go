package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"decisiongateway/shared/abi"
)

// session runs one transaction attempt's statements on the writer's
// connection at the driver level, inside database/sql's Conn.Raw. Through
// database/sql every statement would cost a fresh compile (it has no
// statement cache of its own on a Conn), a goroutine per query watching
// the context, an argument conversion pass and a copy of every cell;
// at the driver level a statement is bound and stepped, and the embedded
// file keeps its statements prepared between attempts (stmtCache).
type session struct {
	ctx   context.Context
	conn  driver.Conn
	cache *stmtCache // nil when statements are not kept: a remote server, or caching off
	e     *Executor
}

// exec runs a statement that returns no rows.
func (s *session) exec(sql string, args []driver.NamedValue) (driver.Result, error) {
	s.e.ran()
	if s.cache == nil {
		s.compiled()
		return s.conn.(driver.ExecerContext).ExecContext(s.ctx, sql, args)
	}
	st, err := s.prepared(sql)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(s.ctx, args)
}

// query runs a statement that returns rows; the caller must close them.
func (s *session) query(sql string, args []driver.NamedValue) (driver.Rows, error) {
	s.e.ran()
	if s.cache == nil {
		s.compiled()
		return s.conn.(driver.QueryerContext).QueryContext(s.ctx, sql, args)
	}
	st, err := s.prepared(sql)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(s.ctx, args)
}

func (s *session) prepared(sql string) (preparedStmt, error) {
	st, fresh, err := s.cache.get(s.ctx, sql)
	if fresh || err != nil {
		s.compiled()
	}
	return st, err
}

// compiled counts a statement SQLite compiled from text (Stats.Prepared).
func (s *session) compiled() {
	if !s.e.remote {
		s.e.counters.prepared.Add(1)
	}
}

// runBatch runs the steps of one batch inside the caller's transaction. A
// step runs only when all its conditions hold against the steps before it;
// a skipped step stays the zero StepResult (Executed false, no rows). On an
// error it returns the index of the failing step.
func (s *session) runBatch(j *job) ([]abi.StepResult, int, error) {
	out := make([]abi.StepResult, len(j.steps))
	for i := range j.steps {
		st := &j.steps[i]
		if !holdsAll(st.When, out[:i]) {
			continue
		}
		if err := s.runStep(st, j.shapes[i], &out[i]); err != nil {
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

// runStep runs one statement with Query or Exec as its shape says
// (sqlshape.go): a driver gives either a statement's rows or its changes
// count, not both.
func (s *session) runStep(st *abi.Statement, sh shape, r *abi.StepResult) error {
	args, err := driverArgs(s.e.args, st.Args)
	if err != nil {
		return err
	}
	s.e.args = args[:0]
	// Nothing of this batch's values stays reachable from the buffer.
	defer clear(args)
	r.Executed = true
	if sh.rows {
		rows, err := s.query(st.SQL, args)
		if err != nil {
			return err
		}
		r.Columns, r.Rows, err = collect(rows)
		if err != nil {
			return err
		}
		if sh.returning {
			r.RowsAffected = int64(len(r.Rows))
		}
		return nil
	}
	res, err := s.exec(st.SQL, args)
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
	if sh.insert && r.RowsAffected > 0 {
		if r.LastInsertID, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return nil
}

// control runs BEGIN IMMEDIATE, COMMIT or ROLLBACK.
func (s *session) control(sql string) error {
	_, err := s.exec(sql, nil)
	return err
}

// collect reads every row of a result set and closes it, once: a driver's
// rows may own their statement and free it on Close.
func collect(rows driver.Rows) (cols []string, out [][]abi.Value, err error) {
	defer func() {
		if cerr := rows.Close(); err == nil && cerr != nil {
			cols, out, err = nil, nil, cerr
		}
	}()
	cols = rows.Columns()
	dest := make([]driver.Value, len(cols))
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return cols, out, nil
			}
			return nil, nil, err
		}
		row := make([]abi.Value, len(cols))
		for i, v := range dest {
			row[i] = fromDriver(v)
		}
		out = append(out, row)
	}
}
