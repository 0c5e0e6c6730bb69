//go:build cgo

package ledger

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// SQLite was configured before its first connection: no statistics, the
// larger lookaside (embedded.go).
func TestSQLiteConfiguredBeforeItsFirstConnection(t *testing.T) {
	if !sqliteConfigured {
		t.Fatal("sqlite3_config failed: SQLite was initialized before the ledger package")
	}
}

// Connections open without SQLite's per-connection mutex, unless the URL
// asks for one.
func TestEmbeddedConnectionsOpenWithoutTheirMutex(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ url, want string }{
		{"file:" + filepath.Join(dir, "a.db"), "no"},
		{"file:" + filepath.Join(dir, "b.db") + "?_mutex=full", "full"},
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
		// And the connection works.
		conn, err := c.Connect(testCtx(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		conn.Close()
	}
}
