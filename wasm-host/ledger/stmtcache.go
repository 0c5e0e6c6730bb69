package ledger

import (
	"container/list"
	"context"
	"database/sql/driver"
	"fmt"
)

// defaultStmtCache bounds the prepared statements the writer keeps. The
// decision path uses about fifteen distinct statements and every route
// together fewer than a hundred; the bound only matters for callers that
// build SQL text with varying content, whose statements are then evicted,
// least recently used first, instead of growing the cache without end.
const defaultStmtCache = 256

// stmtCache holds the statements prepared on one embedded connection, by
// SQL text. Compiling SQL is the largest single cost of a small statement on
// SQLite (about as much as running it), and every route sends the same few
// texts again and again, so each is compiled once per connection and then
// only bound and stepped. A statement belongs to its connection: the cache
// is closed before the connection is, whenever the writer discards or
// replaces it. Only the writer goroutine uses it.
type stmtCache struct {
	conn   driver.ConnPrepareContext
	limit  int
	order  list.List                // of *cachedStmt, most recently used first
	byText map[string]*list.Element // SQL text → element of order
}

type cachedStmt struct {
	sql  string
	stmt preparedStmt
}

// preparedStmt is what the executor needs of a driver's statement: both
// drivers' statements run with a context and are reused until closed.
type preparedStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func newStmtCache(conn driver.ConnPrepareContext, limit int) *stmtCache {
	return &stmtCache{conn: conn, limit: limit, byText: make(map[string]*list.Element)}
}

// get returns the statement for sql, preparing it if the cache has none.
// prepared reports whether it was compiled now.
func (c *stmtCache) get(ctx context.Context, sql string) (st preparedStmt, prepared bool, err error) {
	if el, ok := c.byText[sql]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cachedStmt).stmt, false, nil
	}
	ds, err := c.conn.PrepareContext(ctx, sql)
	if err != nil {
		return nil, false, err
	}
	st, ok := ds.(preparedStmt)
	if !ok {
		ds.Close()
		return nil, false, fmt.Errorf("ledger: driver statement %T cannot run with a context", ds)
	}
	for c.order.Len() >= c.limit {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		old := oldest.Value.(*cachedStmt)
		delete(c.byText, old.sql)
		_ = old.stmt.Close()
	}
	c.byText[sql] = c.order.PushFront(&cachedStmt{sql: sql, stmt: st})
	return st, true, nil
}

// len is the number of statements held.
func (c *stmtCache) len() int { return c.order.Len() }

// close finalizes every statement. It must run before the connection
// closes: SQLite keeps a connection with live statements open as a zombie,
// and the driver frees its memory on close.
func (c *stmtCache) close() {
	for el := c.order.Front(); el != nil; el = el.Next() {
		_ = el.Value.(*cachedStmt).stmt.Close()
	}
	c.order.Init()
	clear(c.byText)
}
