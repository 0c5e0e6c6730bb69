package contract

// SQLShape holds the words both ledger executors (wasm-host/ledger and
// wrangler-compat/src/sqlshape.js) use to tell what a batch step is before
// it runs, so a batch is accepted, refused and reported alike on both
// hosts. Words are upper case; statements are matched case-insensitively.
var SQLShape = struct {
	// Transaction: a statement starting with one of these is refused; the
	// executor owns BEGIN and COMMIT, and a step's COMMIT would break the
	// batch's atomicity.
	Transaction []string `json:"transaction"`
	// RowsFirst: a statement starting with one of these returns rows.
	RowsFirst []string `json:"rowsFirst"`
	// ReadOnlyFirst: a statement starting with one of these cannot write.
	ReadOnlyFirst []string `json:"readOnlyFirst"`
	// Verbs: the first of these at the top level, past any WITH clause, is
	// the statement's own verb.
	Verbs []string `json:"verbs"`
	// RowVerbs: a WITH statement whose verb is one of these returns rows,
	// and RETURNING after one of them is not a RETURNING clause.
	RowVerbs []string `json:"rowVerbs"`
	// InsertVerbs report a last insert rowid.
	InsertVerbs []string `json:"insertVerbs"`
	// Unstable: a SELECT naming one of these may answer differently when
	// run again, so it is not evaluated a second time as a guard.
	Unstable []string `json:"unstable"`
	// PastColumns: at the top level, one of these ends a SELECT's result
	// columns (a comma or * before it may mean more than one column).
	PastColumns []string `json:"pastColumns"`
}{
	Transaction:   []string{"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"},
	RowsFirst:     []string{"SELECT", "VALUES", "PRAGMA", "EXPLAIN"},
	ReadOnlyFirst: []string{"SELECT", "VALUES", "EXPLAIN"},
	Verbs:         []string{"SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE"},
	RowVerbs:      []string{"SELECT", "VALUES"},
	InsertVerbs:   []string{"INSERT", "REPLACE"},
	Unstable: []string{"RANDOM", "RANDOMBLOB", "CHANGES", "TOTAL_CHANGES", "LAST_INSERT_ROWID",
		"CURRENT_TIME", "CURRENT_DATE", "CURRENT_TIMESTAMP"},
	PastColumns: []string{"FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT",
		"UNION", "EXCEPT", "INTERSECT"},
}

// Guards is the text both executors (wasm-host/ledger, translate.go, and
// wrangler-compat/src/ledger.js) put in a batch sent to sqld or Turso as one
// Hrana request: a guard statement follows a tested step and fails exactly
// when the test is false, by computing abs(-9223372036854775808), which
// SQLite refuses with an error containing FailText.
var Guards = struct {
	FailText string `json:"failText"`
	// Affected is the guard of "the step changed rows".
	Affected string `json:"affected"`
	// TruthPrefix and TruthSuffix wrap a one-column SELECT: the guard is
	// true exactly when abi.Value.Truthy would be for its first cell (no
	// row gives NULL, which is false).
	TruthPrefix string `json:"truthPrefix"`
	TruthSuffix string `json:"truthSuffix"`
	// CheckpointEvery is how many real steps may run between checkpoints
	// (a SELECT 1 on the steps since the last one).
	CheckpointEvery int `json:"checkpointEvery"`
}{
	FailText: "integer overflow",
	Affected: "SELECT CASE WHEN changes() > 0 THEN 1 ELSE " + guardFail + " END",
	TruthPrefix: "SELECT CASE WHEN (CASE typeof(v) WHEN 'integer' THEN v <> 0 WHEN 'real' THEN v <> 0" +
		" WHEN 'text' THEN v <> '' AND v <> '0' WHEN 'blob' THEN length(v) > 0 ELSE 0 END) THEN 1 ELSE " +
		guardFail + " END FROM (SELECT (",
	TruthSuffix:     "\n) AS v)",
	CheckpointEvery: 8,
}

const guardFail = "abs(-9223372036854775808)"
