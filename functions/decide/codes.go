package decide

// Error codes of the decision path (schema/errors.md lists them with their
// statuses). Upstream failure codes live in shared/upstream and validation
// codes in shared/validate.
const (
	CodeAuthRateLimited   = "auth_rate_limited"
	CodeUnsupportedMedia  = "unsupported_media_type"
	CodeInvalidIdemKey    = "invalid_idempotency_key"
	CodeRateLimited       = "rate_limit_exceeded"
	CodeInsufficient      = "insufficient_credits"
	CodeInProgress        = "request_in_progress"
	CodeIdemConflict      = "idempotency_conflict"
	CodeIdemFailed        = "idempotency_failed"
	CodeReconciliation    = "request_reconciliation_pending"
	CodeLedgerUnavailable = "ledger_unavailable"
)
