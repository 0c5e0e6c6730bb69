//go:build !wasip1

package ledger

import (
	"errors"

	"modernc.org/sqlite" // registers "sqlite", which libsql-client-go uses for file: URLs
)

// sqliteCode is the extended result code of an embedded database's error.
func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}
