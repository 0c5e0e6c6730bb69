package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"time"
)

// Backoff bounds for a batch that found the database locked by another
// host. The first waits are short because a ledger transaction lasts
// milliseconds; the cap keeps a busy host from sleeping long past the moment
// the lock frees.
const (
	backoffBase = 2 * time.Millisecond
	backoffCap  = 100 * time.Millisecond
	// busyBudget bounds retries for callers whose context has no deadline.
	busyBudget = 30 * time.Second
	// transientBackoffCap is the longest wait between retries of a server
	// that refused or could not be reached: such a server needs seconds
	// (a restart, a connection pool draining), not milliseconds, and
	// retrying it every 100 ms only adds to its load.
	transientBackoffCap = time.Second
)

// backoff is "full jitter" exponential backoff: each wait is uniform in
// [0, min(limit, base·2^n)), which spreads competing hosts apart instead of
// having them retry in lockstep. A zero limit means backoffCap.
type backoff struct {
	n     int
	limit time.Duration
}

func (b *backoff) bound() time.Duration {
	ceiling := b.limit
	if ceiling <= 0 {
		ceiling = backoffCap
	}
	limit := backoffBase << min(b.n, 16)
	if limit > ceiling || limit <= 0 {
		limit = ceiling
	}
	return limit
}

// peek is the longest the next wait can be.
func (b *backoff) peek() time.Duration { return b.bound() + time.Millisecond/4 }

func (b *backoff) next() time.Duration {
	limit := b.bound()
	b.n++
	return time.Duration(rand.Int64N(int64(limit))) + time.Millisecond/4
}

// isBusy reports whether err means another connection holds the write lock.
// Nothing was committed when it happens, so the batch can be run again.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	if code, ok := sqliteCode(err); ok {
		switch code & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
		return false
	}
	// sqld reports SQLite errors as text.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "database table is locked") ||
		strings.Contains(msg, "sqlite_busy") ||
		strings.Contains(msg, "transaction_timeout") ||
		strings.Contains(msg, "transaction timed out")
}

// isRefused reports whether err is a server's refusal to run a request at
// all: sqld answers 429 "Timed out while opening database connection" when
// it has no connection to give, before it runs anything. Such a request can
// be sent again even when it carried a COMMIT or a lone write.
func isRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "error code 429") || strings.Contains(msg, "timed out while opening database connection")
}

// isTransport reports whether err came from reaching the database rather
// than from SQL: the statement may not have run, and after a COMMIT the
// outcome is unknown.
func isTransport(err error) bool {
	if err == nil {
		return false
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	// libsql-client-go reports a non-200 HTTP answer as "error code NNN: …"
	// and an expired stream as "error code STREAM_EXPIRED".
	msg := err.Error()
	return strings.Contains(msg, "error code ") || strings.Contains(msg, "stream is closed")
}

// sleep waits d and reports true, or reports false as soon as the executor
// starts closing.
func sleep(d time.Duration, closing <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-closing:
		return false
	}
}

// message turns a driver error into the text a BatchResult carries: one
// line, without libsql-client-go's "failed to execute SQL:" wrapper, so both
// backends report the same error the same way.
func message(err error) string {
	msg := err.Error()
	for {
		trimmed := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(msg), "failed to execute SQL:"))
		if trimmed == msg {
			break
		}
		msg = trimmed
	}
	return strings.Join(strings.Fields(msg), " ")
}
