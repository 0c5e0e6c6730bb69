//go:build !cgo

package ledger

import (
	"database/sql/driver"
	"errors"
	"net/url"
	"runtime"
)

// embeddedEngine: the embedded ledger is SQLite through cgo (embedded.go),
// which this build left out. The socket build of the functions
// (schema/socket.md) runs this executor inside a WASI module, where cgo
// never builds: only remote ledgers (sqld, Turso) are reachable from
// there, and their errors come as text.
func embeddedEngine(string, []string) (driver.Connector, error) {
	if runtime.GOOS == "wasip1" {
		return nil, errors.New("the socket build reaches only a remote ledger (sqld, Turso), not a file")
	}
	return nil, errors.New("this gateway was built without cgo (CGO_ENABLED=0), which the embedded ledger needs: build it with a C compiler, or set LIBSQL_URL to sqld or Turso")
}

func sqliteCode(error) (int, bool) { return 0, false }

func engineDefaults(url.Values) {}
