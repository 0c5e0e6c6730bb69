//go:build !cgo && !wasip1

package ledger

import (
	"database/sql/driver"
	"errors"
)

// embeddedEngine: the embedded ledger is SQLite through cgo (embedded.go),
// which this build left out.
func embeddedEngine(string, []string) (driver.Connector, error) {
	return nil, errors.New("this gateway was built without cgo (CGO_ENABLED=0), which the embedded ledger needs: build it with a C compiler, or set LIBSQL_URL to sqld or Turso")
}

func sqliteCode(error) (int, bool) { return 0, false }
