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
	path := filepath.Join(t.TempDir(), "l.db")
	e := openT(t, "file:"+path)
	run(t, e, stmt("CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB)"))
	var steps []abi.Statement
	for i := range 20 {
		steps = append(steps, stmt("INSERT INTO b VALUES (?, zeroblob(3000))", abi.Int64(int64(i))))
	}
	asked0, made0 := walWrites()
	run(t, e, steps...)
	asked, made := walWrites()
	// 20 rows of 3000 bytes fill at least 14 pages, two writes each.
	if asked-asked0 < 28 || made-made0 != 1 {
		t.Errorf("SQLite asked for %d writes to the WAL and %d were made, want at least 28 and 1", asked-asked0, made-made0)
	}

	other, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix&mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var n int
	if err := other.QueryRow("SELECT count(*) FROM b WHERE length(v) = 3000").Scan(&n); err != nil || n != 20 {
		t.Errorf("another connection counted %d rows (%v), want 20", n, err)
	}
}
