//go:build cgo

package ledger

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
)

// SQLite was configured before its first connection: no statistics, the
// larger lookaside (embedded.go).
func TestSQLiteConfiguredBeforeItsFirstConnection(t *testing.T) {
	if !sqliteConfigured {
		t.Fatal("sqlite3_config failed: SQLite was initialized before the ledger package")
	}
}

// Connections open without SQLite's per-connection mutex and through the
// dg-wal VFS, unless the URL says otherwise.
func TestEmbeddedConnectionsOpenWithoutTheirMutex(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ url, want, vfs string }{
		{"file:" + filepath.Join(dir, "a.db"), "no", "dg-wal"},
		{"file:" + filepath.Join(dir, "b.db") + "?_mutex=full&vfs=unix", "full", "unix"},
	} {
		c, _, err := embeddedConnector(tc.url, true)
		if err != nil {
			t.Fatal(err)
		}
		_, query, _ := strings.Cut(c.(connector).dsn, "?")
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		if got := q["_mutex"]; len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: _mutex = %q, want %q", tc.url, got, tc.want)
		}
		if got := q["vfs"]; len(got) != 1 || got[0] != tc.vfs {
			t.Errorf("%s: vfs = %q, want %q", tc.url, got, tc.vfs)
		}
		// And the connection works.
		conn, err := c.Connect(testCtx(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		conn.Close()
	}
}

// A commit reaches the WAL as one write, and is in the file when the batch
// returns: a connection through SQLite's own VFS, which reads the file
// and nothing of this process, sees every row.
func TestWALCommitIsOneWrite(t *testing.T) {
	if !walVFS {
		t.Fatal("the dg-wal VFS is not registered")
	}
	// 20 rows of 3000 bytes fill at least 14 pages, two writes each.
	asked, made := commitBlobs(t, 20)
	if asked < 28 || made != 1 {
		t.Errorf("SQLite asked for %d writes to the WAL and %d were made, want at least 28 and 1", asked, made)
	}
}

// A commit larger than SQLite makes in one write goes out in a few. SQLite's
// unix VFS writes at most 0x1ffff bytes per call and reports the disk full
// for the rest; before the VFS's writes stayed under that, every group
// commit over 128 KB (a herd's groups of 20 and more decisions) failed with
// "database or disk is full" and ran again batch by batch.
func TestWALCommitLargerThanOneWrite(t *testing.T) {
	// 100 rows of 3000 bytes: 100 pages, two writes each, over 400 KB;
	// four writes of 124 KB.
	asked, made := commitBlobs(t, 100)
	if asked < 200 || made > 5 {
		t.Errorf("SQLite asked for %d writes to the WAL and %d were made, want at least 200 and at most 5", asked, made)
	}
}

// commitBlobs commits rows rows of 3000 bytes in one batch on a new
// embedded ledger, checks that a connection through SQLite's own VFS then
// sees all of them, and returns the writes SQLite asked of the WAL and the
// writes made meanwhile.
func commitBlobs(t *testing.T, rows int) (asked, made int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db")
	e := openT(t, "file:"+path)
	run(t, e, stmt("CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB)"))
	var steps []abi.Statement
	for i := range rows {
		steps = append(steps, stmt("INSERT INTO b VALUES (?, zeroblob(3000))", abi.Int64(int64(i))))
	}
	asked0, made0 := walWrites()
	run(t, e, steps...)
	asked1, made1 := walWrites()

	other, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix&mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var n int
	if err := other.QueryRow("SELECT count(*) FROM b WHERE length(v) = 3000").Scan(&n); err != nil || n != rows {
		t.Errorf("another connection counted %d rows (%v), want %d", n, err, rows)
	}
	return asked1 - asked0, made1 - made0
}
