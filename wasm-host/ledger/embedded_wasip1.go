//go:build wasip1

package ledger

// The socket build of the functions (schema/socket.md) runs this executor
// inside a WASI module, where SQLite through cgo does not build: only
// remote ledgers (sqld, Turso) are reachable from there, and their errors
// come as text.
func sqliteCode(error) (int, bool) { return 0, false }
