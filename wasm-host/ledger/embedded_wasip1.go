//go:build wasip1

package ledger

import (
	"database/sql/driver"
	"errors"
)

// The socket build of the functions (schema/socket.md) runs this executor
// inside a WASI module, where SQLite through cgo does not build: only
// remote ledgers (sqld, Turso) are reachable from there, and their errors
// come as text.
func embeddedEngine(string, []string) (driver.Connector, error) {
	return nil, errors.New("the socket build reaches only a remote ledger (sqld, Turso), not a file")
}

func sqliteCode(error) (int, bool) { return 0, false }
