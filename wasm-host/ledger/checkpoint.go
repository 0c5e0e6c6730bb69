package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"
)

// Checkpoints of the embedded file run beside the writer, not in it.
//
// SQLite checkpoints a WAL database from inside the COMMIT that takes the
// WAL past wal_autocheckpoint pages (1000 by default): that commit copies
// every page changed since the last checkpoint into the database file
// before it returns, and every batch queued behind the single writer waits
// for it. On closed16/small that was 9% of the writer's CPU (perf), in
// stalls of a millisecond or more that showed in the p99.
//
// So a second connection runs a PASSIVE checkpoint whenever the writer has
// committed since the last one, at most every checkpointPeriod. PASSIVE
// takes no lock the writer needs: it copies what is committed while the
// writer goes on appending. The writer keeps an automatic checkpoint as a
// backstop, at writerAutoCheckpoint pages: it bounds the WAL if the
// checkpointer falls behind, and it is what lets the WAL file start over
// from its beginning (SQLite restarts the WAL only when a write finds every
// frame already copied, which a checkpoint running beside continuous writes
// rarely leaves). By the time it runs, most frames are copied already.
const (
	checkpointPeriod     = 50 * time.Millisecond
	writerAutoCheckpoint = 4000 // pages; 16 MiB of WAL at 4 KiB pages
)

// checkpointer runs PASSIVE checkpoints on its own connection.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}
}

// startCheckpointer opens a connection through connector and checkpoints
// every checkpointPeriod when committed has moved since the last time.
func startCheckpointer(connector driver.Connector, committed func() int64) *checkpointer {
	c := &checkpointer{db: sql.OpenDB(connector), stop: make(chan struct{}), done: make(chan struct{})}
	c.db.SetMaxOpenConns(1)
	c.db.SetMaxIdleConns(1)
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointPeriod)
		defer t.Stop()
		seen := committed()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			if now := committed(); now != seen {
				seen = now
				ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
				// Busy (another checkpoint, or a host's exclusive lock) or
				// any other failure leaves the work to the next tick and to
				// the writer's backstop; nothing committed depends on it.
				_, _ = c.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
				cancel()
			}
		}
	}()
	return c
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() {
	close(c.stop)
	<-c.done
	c.db.Close()
}
