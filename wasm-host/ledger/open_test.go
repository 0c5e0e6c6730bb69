package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"decisiongateway/schema"
	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
)

func TestOpenAcceptsEveryURLSpelling(t *testing.T) {
	dir := t.TempDir()
	server := sqldtest.Start(t)
	for _, url := range []string{
		"file:" + filepath.Join(dir, "a", "b", "ledger.db"), // directories are created
		"file://" + filepath.Join(dir, "abs.db"),            // file:///abs/path
		"file:" + filepath.Join(dir, "50%#1", "l.db"),       // URI characters in the path
		server,
		"libsql://" + strings.TrimPrefix(server, "http://") + "?tls=0",
	} {
		e := openT(t, url)
		if got := scalar(t, e, "SELECT 41 + 1"); got != 42 {
			t.Errorf("%s: SELECT 41 + 1 = %d", url, got)
		}
	}
	for _, p := range [][]string{{"a", "b", "ledger.db"}, {"50%#1", "l.db"}} {
		if _, err := os.Stat(filepath.Join(append([]string{dir}, p...)...)); err != nil {
			t.Errorf("embedded file not created: %v", err)
		}
	}
}

// Remote tells a server from a file by the URL's form, as open does: the
// host parks more instances in a server's round trips (wasm-host/app).
func TestRemoteTellsServersFromFiles(t *testing.T) {
	for url, want := range map[string]bool{
		"":                       false, // DefaultURL
		DefaultURL:               false,
		"file:///var/ledger.db":  false,
		"http://127.0.0.1:8080":  true,
		"https://db.example.com": true,
		"libsql://db.turso.io":   true,
		"ws://127.0.0.1:8080":    true,
	} {
		if got := Remote(url); got != want {
			t.Errorf("Remote(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestOpenDefaultsToDataDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	e := openT(t, "")
	run(t, e, stmt("CREATE TABLE t (x)"))
	if _, err := os.Stat(filepath.Join(".data", "ledger.db")); err != nil {
		t.Fatalf("default ledger not at .data/ledger.db: %v", err)
	}
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, url := range []string{
		"postgres://localhost/db",
		"libsql://localhost:1?tls=2",
		"http://127.0.0.1:1", // nothing listens: Open checks the server answers
	} {
		if e, err := Open(testCtx(t), url, ""); err == nil {
			e.Close()
			t.Errorf("%s: accepted", url)
		}
	}
}

// A ledger file the gateway creates is its owner's alone, and so are the
// WAL and shared-memory files SQLite makes beside it.
func TestCreatedLedgerFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	e, err := OpenWith(testCtx(t), "file:"+filepath.Join(dir, "ledger.db"), "", Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, name := range []string{"ledger.db", "ledger.db-wal", "ledger.db-shm"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v", name, perm)
		}
	}
}

// A ledger URL is shown (logs, errors) without its secrets: the query, the
// password of its user information. A token in the URL is refused, naming
// LIBSQL_AUTH_TOKEN, with no part of it in the message.
func TestLedgerURLsAreShownWithoutSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"http://op:pw123@127.0.0.1:8080":       "http://…@127.0.0.1:8080",
		"http://tok3n@127.0.0.1:8080":          "http://…@127.0.0.1:8080",
		"http://op:p?w@127.0.0.1:8080/x?tls=0": "http://…@127.0.0.1:8080/x",
		"libsql://db.example?authToken=sekrit": "libsql://db.example",
		"http://op:pw123@127.0.0.1:1/?tls=0":   "http://…@127.0.0.1:1/",
		"file:.data/ledger.db":                 "file:.data/ledger.db",
		"http://op:p%zz@host":                  "http://…@host",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := Open(testCtx(t), "http://op:pw123@127.0.0.1:1?authToken=sekrit", "")
	if err == nil || !strings.Contains(err.Error(), "LIBSQL_AUTH_TOKEN") || strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), "pw123") {
		t.Fatalf("a token in the URL: %v", err)
	}
	_, err = Open(testCtx(t), "http://op:pw123@127.0.0.1:1", "")
	if err == nil || strings.Contains(err.Error(), "pw123") {
		t.Fatalf("an unreachable server: %v", err)
	}
}

// file://host/path names a file on another machine: it is refused, even
// where the ledger may be created, rather than read as the relative path
// host/path.
func TestOpenRefusesAFileOnAnotherHost(t *testing.T) {
	t.Chdir(t.TempDir())
	e, err := OpenWith(testCtx(t), "file://elsewhere/ledger.db", "", Options{Create: true})
	if err == nil {
		e.Close()
		t.Fatal("file://elsewhere/ledger.db accepted")
	}
	if _, err := os.Stat(filepath.Join("elsewhere", "ledger.db")); err == nil {
		t.Error("created elsewhere/ledger.db in the working directory")
	}
}

// The embedded file is configured to behave like sqld: foreign keys on, WAL,
// synchronous=NORMAL.
func TestBackendsShareSettings(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		if fk := scalar(t, e, "PRAGMA foreign_keys"); fk != 1 {
			t.Errorf("foreign_keys = %d, want 1", fk)
		}
		if mode := query(t, e, "PRAGMA journal_mode")[0][0].AsString(); mode != "wal" {
			t.Errorf("journal_mode = %s, want wal", mode)
		}
		// NORMAL: the durability schema/ledger.md states.
		if sync := scalar(t, e, "PRAGMA synchronous"); sync != 1 {
			t.Errorf("synchronous = %d, want 1 (NORMAL)", sync)
		}
		run(t, e, stmt("CREATE TABLE p (id INTEGER PRIMARY KEY)"), stmt("CREATE TABLE c (p INTEGER REFERENCES p (id))"))
		if res := e.Exec(testCtx(t), batchOf(stmt("INSERT INTO c VALUES (7)"))); res.Err == "" {
			t.Error("insert violating a foreign key succeeded")
		}
	})
}

// Only `gateway admin migrate` creates a ledger: opening a file that is not
// there fails, names the file by its absolute path, and creates nothing,
// not even its folder.
func TestOpenRefusesAMissingFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, url := range []string{"", "file:elsewhere/ledger.db", "file://" + filepath.Join(dir, "x", "l.db")} {
		e, err := Open(testCtx(t), url, "")
		if err == nil {
			e.Close()
			t.Fatalf("%q: opened a ledger that does not exist", url)
		}
		if !errors.Is(err, ErrNoLedger) || !strings.Contains(err.Error(), dir+string(filepath.Separator)) || !strings.Contains(err.Error(), "admin migrate") {
			t.Errorf("%q: %v", url, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused opens left %v behind", entries)
	}
}

// A ledger that exists but was never migrated, or lacks a migration of this
// build, is refused by RequireMigrated with the missing migrations named;
// after Migrate it is accepted.
func TestRequireMigratedNamesWhatIsMissing(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		var nm *NotMigratedError
		if err := e.RequireMigrated(testCtx(t)); !errors.As(err, &nm) || len(nm.Pending) != len(ms) || !strings.Contains(err.Error(), ms[0].Name) {
			t.Fatalf("fresh ledger: %v", err)
		}
		if err := e.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := e.RequireMigrated(testCtx(t)); err != nil {
			t.Fatalf("migrated ledger refused: %v", err)
		}
		last := ms[len(ms)-1]
		run(t, e, stmt("DELETE FROM schema_migrations WHERE version = ?", abi.Int64(int64(last.Version))))
		if err := e.RequireMigrated(testCtx(t)); !errors.As(err, &nm) || len(nm.Pending) != 1 || nm.Pending[0] != last.Name || !strings.Contains(err.Error(), e.Name()) {
			t.Fatalf("ledger one migration behind: %v", err)
		}
	})
}

// A clean close leaves the WAL file for the next start (persistent WAL)
// with every commit already in the database file: reopened, the rows are
// there, and a reader of the database file alone would see them too.
func TestEmbeddedCloseKeepsTheWALFileAndCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	e, err := OpenWith(testCtx(t), "file:"+path, "", Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, stmt("CREATE TABLE t (x)"), stmt("INSERT INTO t VALUES (7)"))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("the WAL file did not outlive the close: %v", err)
	}
	// Copied without its WAL, the database file holds the committed row.
	alone := filepath.Join(t.TempDir(), "alone.db")
	db, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, db, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, openT(t, "file:"+alone), "SELECT x FROM t"); got != 7 {
		t.Errorf("database file alone: x = %d, want 7 (not checkpointed at close)", got)
	}
	if got := scalar(t, openT(t, "file:"+path), "SELECT x FROM t"); got != 7 {
		t.Errorf("reopened: x = %d, want 7", got)
	}
}

// Commits reach the database file while the host runs, copied by the
// checkpointer beside the writer (checkpoint.go): the WAL stays far below
// the writer's own automatic checkpoint here, so without it the file would
// not grow until the close.
func TestEmbeddedCommitsAreCheckpointedBesideTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	e := openT(t, "file:"+path)
	run(t, e, stmt("CREATE TABLE t (x BLOB)"))
	blob := abi.Bytes(bytes.Repeat([]byte("x"), 1000))
	for range 100 {
		run(t, e, stmt("INSERT INTO t VALUES (?)", blob))
	}
	const want = 100 * 1000
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file is %d bytes 10 s after the commits, want ≥ %d: nothing was checkpointed", fi.Size(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := scalar(t, e, "SELECT count(*) FROM t"); got != 100 {
		t.Errorf("%d rows, want 100", got)
	}
}
