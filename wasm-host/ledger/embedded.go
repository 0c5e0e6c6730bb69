//go:build cgo

package ledger

/*
int sqlite3_config(int, ...);

// dg_sqlite_config sets what SQLite allows only before its first
// connection: no memory statistics (SQLITE_CONFIG_MEMSTATUS, 9) and a
// larger lookaside per connection (SQLITE_CONFIG_LOOKASIDE, 13).
static int dg_sqlite_config(void) {
	int rc = sqlite3_config(9, 0);
	if (rc == 0) rc = sqlite3_config(13, 1200, 500);
	return rc;
}

int dg_wal_register(void);
*/
import "C"

import (
	"context"
	"database/sql/driver"
	"errors"
	"net/url"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The embedded ledger is SQLite itself, through cgo (mattn/go-sqlite3).
// Until 2026-11 it was modernc.org/sqlite, SQLite translated to Go, so
// that the gateway built without a C compiler; but the file's statements
// are most of a decision's CPU on this host, and the same prepared
// statements run at the driver level, as the writer runs them, cost a
// fifth less in C: BenchmarkDecision/embedded/parallel8, CPU per decision
// 74 and 73 µs on modernc, 59 and 54 µs on cgo (alternated, 6000
// decisions each); make bench-load closed16/small/embedded 0.37–0.38× to
// 0.41–0.42× of the proxy, medium 0.37–0.39× to 0.39–0.41×. The
// container's static binary links SQLite in (scripts/container-context.sh).
// A build without cgo (CGO_ENABLED=0) has no embedded ledger and says so
// (embedded_nocgo.go, which the socket build uses too); sqld and Turso
// need none.

// SQLite's own locking and allocation, set for how the ledger uses it.
// Every connection is used by one goroutine at a time (database/sql hands
// a connection to one caller; the writer and the checkpointer own theirs),
// so connections open without their mutex (_mutex=no in the DSN, unless
// LIBSQL_URL says otherwise). SQLite's memory statistics take a global
// mutex on every allocation, and nothing here reads them, so they are off;
// and each connection gets 500 lookaside slots instead of 40, 600 KB
// (SQLite's per-connection allocator for its small objects, which a
// compiled statement's run and every compile take from before malloc).
// BenchmarkDecision/embedded CPU per decision, three alternations of 8000
// decisions: parallel8 61 / 69 / 57 -> 48 / 48 / 52 us, a statement
// compiled each time (parallel8/nocache) 229 / 229 / 227 -> 125 / 123 /
// 128 us; the mutex and the statistics alone gave 54 / 58 / 55 and 195 /
// 196 / 195. The WAL is written through the dg-wal VFS (walwrite.go).
func init() {
	// The settings fail only when SQLite was initialized already (another
	// package opened a database first): its defaults stay, nothing else
	// changes. Registering the VFS initializes SQLite, so it comes second.
	sqliteConfigured = C.dg_sqlite_config() == 0
	walVFS = C.dg_wal_register() == 0
}

// sqliteConfigured reports whether init's settings took effect.
var sqliteConfigured bool

// engineDefaults adds to a file: URL's parameters what the engine sets
// unless the URL does: no connection mutex, the dg-wal VFS.
func engineDefaults(q url.Values) {
	if !q.Has("_mutex") {
		q.Set("_mutex", "no")
	}
	if !q.Has("vfs") && walVFS {
		q.Set("vfs", "dg-wal")
	}
}

// embeddedEngine opens dsn (a file: URI) with mattn/go-sqlite3 and runs
// pragmas, each as PRAGMA p, on every connection it opens.
func embeddedEngine(dsn string, pragmas []string) (driver.Connector, error) {
	d := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		for _, p := range pragmas {
			if _, err := c.Exec("PRAGMA "+p, nil); err != nil {
				return err
			}
		}
		return nil
	}}
	return connector{dsn: dsn, driver: d}, nil
}

type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.driver }

// sqliteCode is the extended result code of an embedded database's error.
func sqliteCode(err error) (int, bool) {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return int(se.ExtendedCode), true
	}
	return 0, false
}
