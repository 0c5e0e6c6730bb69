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
}{
	Transaction:   []string{"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"},
	RowsFirst:     []string{"SELECT", "VALUES", "PRAGMA", "EXPLAIN"},
	ReadOnlyFirst: []string{"SELECT", "VALUES", "EXPLAIN"},
	Verbs:         []string{"SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE"},
	RowVerbs:      []string{"SELECT", "VALUES"},
	InsertVerbs:   []string{"INSERT", "REPLACE"},
}
