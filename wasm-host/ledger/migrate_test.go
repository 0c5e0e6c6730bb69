package ledger

import (
	"sync"
	"testing"

	"decisiongateway/schema"
	"decisiongateway/shared/abi"
)

func TestEmbeddedMigrationsAreWellFormed(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("migrations %v: want 0001 first", ms)
	}
	for _, m := range ms {
		b, err := migrationBatch(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plan(b.Steps); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
}

func TestMigrateTwiceAppliesOnce(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		for i := 0; i < 2; i++ {
			if err := e.Migrate(testCtx(t)); err != nil {
				t.Fatalf("Migrate #%d: %v", i+1, err)
			}
		}
		if n := scalar(t, e, "SELECT count(*) FROM schema_migrations"); n != int64(len(ms)) {
			t.Errorf("%d migrations recorded, want %d", n, len(ms))
		}
		run(t, e, stmt("INSERT INTO gateway_meta (key, value) VALUES ('k', 'v')"))
	})
}

// Two hosts starting together both migrate; each migration must run once.
func TestConcurrentMigrate(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	eachBackend(t, func(t *testing.T, url string) {
		hosts := []*Executor{openT(t, url), openT(t, url)}
		errs := make([]error, len(hosts))
		var wg sync.WaitGroup
		for i, e := range hosts {
			wg.Go(func() { errs[i] = e.Migrate(testCtx(t)) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("host %d: %v", i, err)
			}
		}
		rows := query(t, hosts[0], "SELECT version, name FROM schema_migrations ORDER BY version")
		if len(rows) != len(ms) {
			t.Fatalf("recorded %v, want %d migrations", rows, len(ms))
		}
		for i, m := range ms {
			if rows[i][0].AsInt() != int64(m.Version) || rows[i][1].AsString() != m.Name {
				t.Errorf("row %d = %v, want %d %s", i, rows[i], m.Version, m.Name)
			}
		}
	})
}

// A migration file with several statements, comments and a trigger body
// (semicolons inside BEGIN … END) runs as one conditional batch, and a second
// run of the same batch changes nothing.
func TestMigrationBatchSplitsStatementsOnce(t *testing.T) {
	m := schema.Migration{Version: 9001, Name: "9001_test.sql", SQL: `
-- a comment; with a semicolon
CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE a_log (n INTEGER NOT NULL); /* another; comment */
CREATE TRIGGER a_logged AFTER INSERT ON a BEGIN
  INSERT INTO a_log VALUES (NEW.n);
  INSERT INTO a_log VALUES (NEW.n * 10);
END;
INSERT INTO a (n) VALUES (7);
`}
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		if err := e.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		b, err := migrationBatch(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Steps) != 6 {
			t.Fatalf("%d steps, want check + 4 statements + record", len(b.Steps))
		}
		for i := 0; i < 2; i++ {
			res := e.Exec(testCtx(t), b)
			if res.Err != "" {
				t.Fatalf("run %d: %s", i+1, res.Err)
			}
			if ran := res.Steps[len(res.Steps)-1].Executed; ran != (i == 0) {
				t.Errorf("run %d: recorded = %v", i+1, ran)
			}
		}
		if got := scalar(t, e, "SELECT sum(n) FROM a_log"); got != 77 {
			t.Errorf("trigger logged %d, want 77", got)
		}
		if got := scalar(t, e, "SELECT count(*) FROM schema_migrations WHERE version = ?", abi.Int64(9001)); got != 1 {
			t.Errorf("version recorded %d times", got)
		}
	})
}
