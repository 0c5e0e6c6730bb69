package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
)

// A remote batch in one request.
//
// Hrana's batch conditions can only ask whether an earlier step succeeded
// (ok), failed (error), or combinations of those; ours ask about a step's
// values (rows changed, first cell true). The translation turns each value
// test into a guard: a statement placed right after the tested step that
// fails exactly when the test is false, so "test holds" becomes ok(guard).
// A guard fails by computing abs(-9223372036854775808), which SQLite answers
// with an "integer overflow" error instead of a value.
//
//   - Affected / NotAffected on an INSERT, UPDATE, DELETE or REPLACE: the
//     guard tests changes(), SQLite's count of rows the most recent such
//     statement changed, which is what sqld reports as rows affected (and
//     what a RETURNING statement returns rows for). It runs only when the
//     step ran (ok(step)), so not(ok(guard)) is "skipped or changed none".
//   - Truthy / Falsy on a SELECT: the guard evaluates the step's SQL again,
//     with its arguments, as a scalar subquery right after it. A read leaves
//     the database as it was, so the subquery sees what the step saw. The
//     cell's truth is computed by storage class to match abi.Value.Truthy
//     (SQL's own CASE WHEN would call the text 'yes' false).
//   - Tests whose answer does not depend on the data are decided here: a
//     step that returns no rows is never truthy, a SELECT never changes rows.
//
// Atomicity: the batch is BEGIN IMMEDIATE, the steps, COMMIT, then ROLLBACK
// if COMMIT did not succeed. Hrana runs a step after a failed one, and some
// SQLite errors end the transaction by themselves, after which further
// statements would commit one by one; so every real step and the COMMIT
// run only if no real step before them failed. "Step k did not fail" is
// written ok(k) or not(k's own tests): sqld 0.24 also counts a skipped step
// as error(k), so that test cannot be used. A condition names the steps
// since the latest checkpoint, a SELECT 1 that runs every checkpointEvery
// real steps only if none before it failed; that keeps each condition
// short instead of naming every earlier step.
//
// Batches the translation cannot express exactly (a value test on a
// statement that writes and returns rows, on a multi-column or
// non-deterministic SELECT, or a rows-affected test on DDL) go through the
// interactive path instead.

// The guards' text and the checkpoint spacing are the contract's
// (shared/contract, Guards), which the Workers shim's translation reads too.
// A checkpoint every so many real steps keeps each condition short: a real
// step's condition names the ones since the last checkpoint, and sqld spends
// about as much on a checkpoint as on a small statement, so one per step
// doubled a decision's statements.
var (
	guardText       = &contract.Guards
	checkpointEvery = contract.Guards.CheckpointEvery
)

// remotePlan is a group of batches translated into one Hrana batch.
type remotePlan struct {
	steps []hranaStep
	// at[j][i] is the Hrana step of job j's step i, or -1 when the
	// translation already knows it is skipped.
	at      [][]int
	kinds   []stepKind // per Hrana step
	begin   int        // -1 for a lone statement run without a transaction
	commit  int
	guarded []bool // per Hrana step: a guard, whose failure is expected
}

type stepKind uint8

const (
	kindControl stepKind = iota // BEGIN, COMMIT, ROLLBACK, checkpoints
	kindReal
	kindGuard
)

// per-step guard indexes while translating one job.
type guards struct {
	affected, truthy int // Hrana step, or -1
}

// translate builds the one-request form of group, or reports false when
// some batch needs the interactive path.
func translate(group []*job) (*remotePlan, bool) { return translateIn(group, false) }

// translateIn is translate; with tx a lone statement is wrapped in a
// transaction too. A request written behind another still unanswered is
// always a transaction (group.go): if the one ahead left the stream inside
// its transaction (its COMMIT and ROLLBACK both failed), this one's BEGIN
// fails, none of its statements run, and its ROLLBACK ends what was left.
// A lone statement there would run inside that transaction instead.
func translateIn(group []*job, tx bool) (*remotePlan, bool) {
	p := &remotePlan{at: make([][]int, len(group)), begin: -1, commit: -1}
	if !tx && len(group) == 1 && len(group[0].steps) == 1 {
		// One statement is atomic on its own: no transaction needed.
		j := group[0]
		p.at[0] = []int{p.add(realStmt(&j.steps[0], j.shapes[0]), nil, kindReal)}
		return p, true
	}
	p.begin = p.add(hranaStmt{SQL: "BEGIN IMMEDIATE"}, nil, kindControl)
	// A real step runs when the latest checkpoint ran, no real step since
	// has failed (the window), and its own tests hold.
	base, window := okCond(p.begin), make([]hranaCond, 0, checkpointEvery)
	alive := func() []hranaCond { return append([]hranaCond{base}, window...) }
	for ji, j := range group {
		needAff, needTruth, ok := needs(j)
		if !ok {
			return nil, false
		}
		at := make([]int, len(j.steps))
		g := make([]guards, len(j.steps))
		for i := range j.steps {
			st := &j.steps[i]
			var tests []hranaCond
			run := true
			for _, c := range st.When {
				hc, known, holds := condition(c, at, g, j.shapes)
				if known {
					run = run && holds
					continue
				}
				tests = append(tests, hc)
			}
			at[i], g[i] = -1, guards{-1, -1}
			if !run {
				continue
			}
			k := p.add(realStmt(st, j.shapes[i]), andCond(append(alive(), tests...)), kindReal)
			at[i] = k
			if needAff[i] && j.shapes[i].dml {
				g[i].affected = p.add(hranaStmt{SQL: guardText.Affected}, ptr(okCond(k)), kindGuard)
			}
			if needTruth[i] && j.shapes[i].rows {
				g[i].truthy = p.add(hranaStmt{SQL: guardText.TruthPrefix + st.SQL + guardText.TruthSuffix, Args: hranaArgs(st.Args)}, ptr(okCond(k)), kindGuard)
			}
			// "k did not fail" is "k succeeded or its own tests were
			// false" (sqld's error(k) is also true for a skipped step).
			// Leaving out the window's terms keeps each condition linear;
			// where they were false, every later step is skipped anyway.
			noErr := okCond(k)
			if len(tests) > 0 {
				noErr = hranaCond{Type: "or", Conds: []hranaCond{okCond(k), notCond(*andCond(tests))}}
			}
			if window = append(window, noErr); len(window) == checkpointEvery {
				cp := p.add(hranaStmt{SQL: "SELECT 1"}, andCond(alive()), kindControl)
				base, window = okCond(cp), window[:0:0]
			}
		}
		p.at[ji] = at
	}
	p.commit = p.add(hranaStmt{SQL: "COMMIT"}, andCond(alive()), kindControl)
	rb := notCond(okCond(p.commit))
	p.add(hranaStmt{SQL: "ROLLBACK"}, &rb, kindControl)
	return p, true
}

// needs finds which steps of j are tested for rows changed and for truth,
// and reports false when a test cannot be translated exactly.
func needs(j *job) (affected, truth []bool, ok bool) {
	affected = make([]bool, len(j.steps))
	truth = make([]bool, len(j.steps))
	for i := range j.steps {
		for _, c := range j.steps[i].When {
			s := j.shapes[c.Step]
			switch c.Test {
			case abi.Affected, abi.NotAffected:
				// A statement that returns rows without writing reports 0;
				// DDL and PRAGMA report whatever the driver saw last.
				if !s.dml && !(s.rows && !s.returning && s.readOnly) {
					return nil, nil, false
				}
				affected[c.Step] = true
			case abi.Truthy, abi.Falsy:
				if s.rows && !scalarSelect(j.steps[c.Step].SQL, s) {
					return nil, nil, false
				}
				truth[c.Step] = true
			}
		}
	}
	return affected, truth, true
}

// condition translates one of our conditions on step k. known reports that
// its value is decided without the database, and holds is that value.
func condition(c abi.Cond, at []int, g []guards, shapes []shape) (hc hranaCond, known, holds bool) {
	k := c.Step
	if at[k] < 0 {
		// Skipped: not executed, so nothing changed and no cell is true.
		return hranaCond{}, true, c.Test == abi.NotAffected || c.Test == abi.Falsy
	}
	s := shapes[k]
	switch c.Test {
	case abi.Affected, abi.NotAffected:
		if g[k].affected < 0 { // a read: changes nothing
			return hranaCond{}, true, c.Test == abi.NotAffected
		}
		if c.Test == abi.Affected {
			return okCond(g[k].affected), false, false
		}
		return notCond(okCond(g[k].affected)), false, false
	default:
		if !s.rows || g[k].truthy < 0 { // no rows: the first cell is NULL
			return hranaCond{}, true, c.Test == abi.Falsy
		}
		if c.Test == abi.Truthy {
			return okCond(g[k].truthy), false, false
		}
		return notCond(okCond(g[k].truthy)), false, false
	}
}

// scalarSelect reports whether a step can be evaluated again as a scalar
// subquery with the same result: a plain SELECT (not a write with
// RETURNING) whose result is one column and that gives the same answer when
// run twice in a row. The column count is read from the SQL text: a
// top-level comma or * before FROM means it may not be one column.
func scalarSelect(sql string, s shape) bool {
	if !s.readOnly || s.returning {
		return false
	}
	lx := lexer{src: sql}
	depth, list, first := 0, true, true
	for {
		tok, text, err := lx.next()
		if err != nil {
			return false
		}
		switch tok {
		case tokEOF:
			return !first
		case tokOpen:
			depth++
		case tokClose:
			depth--
		case tokWord:
			w := strings.ToUpper(text)
			if first {
				if w != "SELECT" {
					return false
				}
				first = false
				continue
			}
			if slices.Contains(shapeWords.Unstable, w) {
				return false // may differ between the step and its guard
			}
			if depth == 0 && slices.Contains(shapeWords.PastColumns, w) {
				list = false
			}
		case tokSemicolon:
			return false // the SQL is wrapped in a subquery
		case tokOther:
			if strings.EqualFold(text, "'now'") {
				return false
			}
			if list && depth == 0 && (text == "," || text == "*") {
				return false
			}
		}
	}
}

func realStmt(st *abi.Statement, s shape) hranaStmt {
	return hranaStmt{SQL: st.SQL, Args: hranaArgs(st.Args), WantRows: s.rows}
}

func hranaArgs(vals []abi.Value) []hranaValue {
	if len(vals) == 0 {
		return nil
	}
	out := make([]hranaValue, len(vals))
	for i, v := range vals {
		out[i] = toHrana(v)
	}
	return out
}

func (p *remotePlan) add(st hranaStmt, cond *hranaCond, kind stepKind) int {
	p.steps = append(p.steps, hranaStep{Stmt: st, Condition: cond})
	p.kinds = append(p.kinds, kind)
	return len(p.steps) - 1
}

func okCond(step int) hranaCond { return hranaCond{Type: "ok", Step: &step} }
func notCond(c hranaCond) hranaCond {
	return hranaCond{Type: "not", Cond: &c}
}

func andCond(conds []hranaCond) *hranaCond {
	if len(conds) == 1 {
		return &conds[0]
	}
	return &hranaCond{Type: "and", Conds: conds}
}

// attemptRemote runs group as one Hrana request and reports the outcome in
// the terms the interactive path uses, so commit's retry and group rules
// apply unchanged.
func (e *Executor) attemptRemote(ctx context.Context, group []*job, p *remotePlan) attempt {
	res, err := e.hrana.batch(ctx, p.steps)
	return e.interpret(group, p, res, err)
}

// interpret reads a remote batch's answer (or its failure) as an attempt.
func (e *Executor) interpret(group []*job, p *remotePlan, res *hranaBatchResult, err error) attempt {
	if res != nil {
		for k := range res.StepResults {
			if res.StepResults[k] != nil || res.StepErrors[k] != nil {
				e.counters.statements.Add(1)
			}
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, errNotSent) || errors.Is(err, errRefused) || isDial(err):
			// Nothing ran: safe to retry, like a failed BEGIN.
			return attempt{err: err, stage: stageBegin}
		case p.begin < 0:
			return attempt{err: err, stage: stageAlone}
		default:
			// The request may have been carried out: the COMMIT's outcome
			// is unknown.
			return attempt{err: err, stage: stageCommit}
		}
	}
	if p.begin >= 0 && res.StepResults[p.commit] == nil && res.StepResults[p.commit+1] == nil {
		// Neither COMMIT nor ROLLBACK succeeded: the stream may still be
		// inside the transaction, so no later batch may use it.
		e.hrana.reset()
	}
	if p.begin >= 0 {
		if e := res.StepErrors[p.begin]; e != nil {
			return attempt{err: errors.New(e.Message), stage: stageBegin}
		}
	}
	for ji, at := range p.at {
		for i, k := range at {
			if k < 0 || res.StepErrors[k] == nil {
				continue
			}
			err := errors.New(res.StepErrors[k].Message)
			if p.begin < 0 {
				return attempt{err: err, stage: stageAlone}
			}
			return attempt{err: err, stage: stageStep, job: ji, step: i}
		}
	}
	for k, kind := range p.kinds {
		// A guard may only fail by design; anything else means a test was
		// decided wrongly, and the batch may have committed on it.
		if e := res.StepErrors[k]; kind == kindGuard && e != nil && !strings.Contains(e.Message, guardText.FailText) {
			return attempt{err: fmt.Errorf("condition check failed: %s: %w", e.Message, driver.ErrBadConn), stage: stageCommit}
		}
	}
	if p.commit >= 0 {
		if e := res.StepErrors[p.commit]; e != nil {
			return attempt{err: errors.New(e.Message), stage: stageCommit}
		}
		if res.StepResults[p.commit] == nil {
			return attempt{err: fmt.Errorf("hrana: COMMIT did not run: %w", driver.ErrBadConn), stage: stageCommit}
		}
	}
	out := make([][]abi.StepResult, len(group))
	for ji, j := range group {
		steps := make([]abi.StepResult, len(j.steps))
		for i, k := range p.at[ji] {
			if k < 0 || res.StepResults[k] == nil {
				continue
			}
			stepResult(res.StepResults[k], j.shapes[i], &steps[i])
		}
		out[ji] = steps
	}
	return attempt{steps: out}
}

// stepResult fills r as runStep would have from the same statement: rows
// only for statements that return rows, rows affected as the row count for
// RETURNING and 0 for reads, the last insert rowid only for an INSERT that
// inserted.
func stepResult(h *hranaStmtResult, s shape, r *abi.StepResult) {
	r.Executed = true
	if s.rows {
		r.Columns = make([]string, len(h.Cols))
		for i, c := range h.Cols {
			if c.Name != nil {
				r.Columns[i] = *c.Name
			}
		}
		for _, row := range h.Rows {
			vals := make([]abi.Value, len(row))
			for i, v := range row {
				var decl *string
				if i < len(h.Cols) {
					decl = h.Cols[i].Decltype
				}
				vals[i] = fromHrana(v, decl)
			}
			r.Rows = append(r.Rows, vals)
		}
		if s.returning {
			r.RowsAffected = int64(len(r.Rows))
		}
		return
	}
	r.RowsAffected = h.AffectedRowCount
	if s.insert && r.RowsAffected > 0 && h.LastInsertRowid != nil {
		r.LastInsertID, _ = strconv.ParseInt(*h.LastInsertRowid, 10, 64)
	}
}

// isDial reports an error from making the connection, before any byte of
// the request was sent.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func ptr(c hranaCond) *hranaCond { return &c }
