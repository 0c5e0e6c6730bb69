package ledgerq

import (
	"time"

	"decisiongateway/shared/batch"
	"decisiongateway/shared/platform"
)

// Abandon settles one pending attempt as failed and refunded, at once,
// with its idempotency record failed: the host calls it when the module
// serving the request stopped without answering (a trap, the deadline, the
// client gone), so nothing will ever settle the attempt. Left alone it
// would stay pending for its whole lease, and every request of the account
// would meet 503 request_reconciliation_pending meanwhile — on whichever
// version of the function it landed (wasm-host/canary). It reports whether
// it settled anything; an attempt already settled is left as it is.
func Abandon(l platform.Ledger, requestID, code string, now time.Time) (bool, error) {
	var x batch.Builder
	at, id := num(now.Unix()), str(requestID)
	const pending = `SELECT id FROM requests WHERE id = ? AND state = 'pending'`
	x.Add(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at)
SELECT account_id, cost, 'refund', id, ? FROM requests WHERE id = ? AND state = 'pending'`, nil, at, id)
	x.Add(`UPDATE accounts SET balance = balance + (SELECT cost FROM requests WHERE id = ? AND state = 'pending')
WHERE id = (SELECT account_id FROM requests WHERE id = ? AND state = 'pending')`, nil, id, id)
	x.Add(`UPDATE idempotency SET state = 'failed' WHERE state = 'pending' AND request_id IN (`+pending+`)`, nil, id)
	done := x.Add(`UPDATE requests SET state = 'failed', error_code = ?, finished_at = ? WHERE id = ? AND state = 'pending'`,
		nil, str(code), at, id)
	res, err := x.Run(l)
	if err != nil {
		return false, err
	}
	return res[done].RowsAffected > 0, nil
}
