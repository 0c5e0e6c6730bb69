package contract

// Code is a stable platform error code: the wire value of
// X-Service-Error-Code and error.code (spec §7). Each code is defined once,
// here, with its status in Errors; call sites name the code and never pick
// a status of their own.
type Code string

// The platform's error codes, in the order of schema/errors.md.
const (
	// Decision request validation (shared/validate).
	BodyTooLarge        Code = "body_too_large"
	InvalidJSON         Code = "invalid_json"
	JSONTooDeep         Code = "json_too_deep"
	NumberOutOfRange    Code = "number_out_of_range"
	DuplicateKey        Code = "duplicate_key"
	BodyNotObject       Code = "body_not_object"
	InvalidModel        Code = "invalid_model"
	MissingState        Code = "missing_state"
	InvalidState        Code = "invalid_state"
	InvalidQuestions    Code = "invalid_questions"
	TooManyQuestions    Code = "too_many_questions"
	InvalidQuestionName Code = "invalid_question_name"
	InvalidQuestion     Code = "invalid_question"
	InvalidQuestionType Code = "invalid_question_type"
	InvalidInstructions Code = "invalid_instructions"
	InvalidCriteria     Code = "invalid_criteria"
	TooManyOptions      Code = "too_many_options"
	InvalidOptionName   Code = "invalid_option_name"
	TooManyLevels       Code = "too_many_levels"
	// Upstream answer validation.
	InvalidUpstreamAnswer Code = "invalid_upstream_answer"
	// Routing and runtime (the hosts).
	InvalidBody         Code = "invalid_body"
	BodyTimeout         Code = "body_timeout"
	NotFound            Code = "not_found"
	MethodNotAllowed    Code = "method_not_allowed"
	InternalError       Code = "internal_error"
	FunctionUnavailable Code = "function_unavailable"
	Overloaded          Code = "overloaded"
	FunctionTimeout     Code = "function_timeout"
	Misconfigured       Code = "misconfigured"
	// Decision path.
	MissingAPIKey                Code = "missing_api_key"
	InvalidAPIKey                Code = "invalid_api_key"
	AuthRateLimited              Code = "auth_rate_limited"
	UnsupportedMediaType         Code = "unsupported_media_type"
	InvalidIdempotencyKey        Code = "invalid_idempotency_key"
	RateLimitExceeded            Code = "rate_limit_exceeded"
	InsufficientCredits          Code = "insufficient_credits"
	RequestInProgress            Code = "request_in_progress"
	IdempotencyConflict          Code = "idempotency_conflict"
	IdempotencyFailed            Code = "idempotency_failed"
	RequestReconciliationPending Code = "request_reconciliation_pending"
	LedgerUnavailable            Code = "ledger_unavailable"
	UpstreamNotConfigured        Code = "upstream_not_configured"
	UpstreamTimeout              Code = "upstream_timeout"
	UpstreamUnavailable          Code = "upstream_unavailable"
	UpstreamResponseTooLarge     Code = "upstream_response_too_large"
	UpstreamResponseUnsafe       Code = "upstream_response_unsafe"
	UpstreamInvalidResponse      Code = "upstream_invalid_response"
	ProviderBusy                 Code = "provider_busy"
	UpstreamRejectedRequest      Code = "upstream_rejected_request"
	UpstreamAuthFailed           Code = "upstream_auth_failed"
	UpstreamNotFound             Code = "upstream_not_found"
	UpstreamError                Code = "upstream_error"
	// Console and sign-in.
	BearerNotAccepted      Code = "bearer_not_accepted"
	OriginNotAllowed       Code = "origin_not_allowed"
	SessionRequired        Code = "session_required"
	InvalidRequest         Code = "invalid_request"
	InvalidKeyName         Code = "invalid_key_name"
	KeyLimitReached        Code = "key_limit_reached"
	KeyCreationRateLimited Code = "key_creation_rate_limited"
	KeyNotFound            Code = "key_not_found"
	InvalidEmail           Code = "invalid_email"
	SigninRateLimited      Code = "signin_rate_limited"
	MailNotConfigured      Code = "mail_not_configured"
	MailFailed             Code = "mail_failed"
	SigninLinkInvalid      Code = "signin_link_invalid"
	// Edge and router upstreams; model listing.
	UnsupportedExtensionField Code = "unsupported_extension_field"
	UnsupportedModel          Code = "unsupported_model"
	ModelListingNotSupported  Code = "model_listing_not_supported"
)

// ErrorCode is one row of the error table.
type ErrorCode struct {
	Code Code `json:"code"`
	// Status is the HTTP status the platform answers the code with; 0 for
	// a code only ever sent with the upstream's own status.
	Status int `json:"status"`
	// Forwarded: the code also classifies an upstream's error, which keeps
	// the upstream's status (spec §7 rule 1).
	Forwarded bool   `json:"forwarded,omitempty"`
	Meaning   string `json:"meaning"`
}

// Errors is every platform error code. schema/errors.md documents each row
// (a test holds the two together) and the Workers shim gets it generated
// (wrangler-compat/src/contract.gen.js).
var Errors = []ErrorCode{
	{BodyTooLarge, 413, false, "the raw body is over the route's limit (65,536 bytes for a decision)"},
	{InvalidJSON, 400, false, "the body is not one well-formed JSON value in UTF-8"},
	{JSONTooDeep, 400, false, "objects and arrays nest more than 32 levels"},
	{NumberOutOfRange, 400, false, "a number would round to ±infinity as a float64"},
	{DuplicateKey, 400, false, "an object has two members with equal keys after escape decoding"},
	{BodyNotObject, 400, false, "the root value is not a JSON object"},
	{InvalidModel, 400, false, "model is present but not a usable model name"},
	{MissingState, 400, false, "state is absent"},
	{InvalidState, 400, false, "state is a number or a boolean"},
	{InvalidQuestions, 400, false, "questions is absent, not an object, or empty"},
	{TooManyQuestions, 400, false, "questions has more than 32 entries"},
	{InvalidQuestionName, 400, false, "a question name is blank or longer than 128 characters"},
	{InvalidQuestion, 400, false, "a question is not a JSON object"},
	{InvalidQuestionType, 400, false, "a question's type is not choice, score or noul"},
	{InvalidInstructions, 400, false, "instructions is a number or a boolean"},
	{InvalidCriteria, 400, false, "a question's criteria do not fit its type"},
	{TooManyOptions, 400, false, "a choice question has more than 255 options"},
	{InvalidOptionName, 400, false, "a choice option name is blank or longer than 128 characters"},
	{TooManyLevels, 400, false, "a score question has more than 10 levels"},
	{InvalidUpstreamAnswer, 502, false, "an upstream success breaks the answer contract; refunded"},
	{InvalidBody, 400, false, "the request body could not be read"},
	{BodyTimeout, 408, false, "the body did not arrive in time; no function ran"},
	{NotFound, 404, false, "no route matches the path"},
	{MethodNotAllowed, 405, false, "the route exists but not for this method"},
	{InternalError, 500, false, "the function failed"},
	{FunctionUnavailable, 503, false, "the route's function is not deployed on this host"},
	{Overloaded, 503, false, "every instance of the function is busy"},
	{FunctionTimeout, 504, false, "the function did not finish before its deadline"},
	{Misconfigured, 503, false, "a setting of this Worker or socket module is invalid; it serves nothing until fixed"},
	{MissingAPIKey, 401, false, "no Authorization header"},
	{InvalidAPIKey, 401, false, "the API key is malformed, unknown or revoked"},
	{AuthRateLimited, 429, false, "too many authentication attempts from the client address this minute"},
	{UnsupportedMediaType, 415, false, "Content-Type is not application/json"},
	{InvalidIdempotencyKey, 400, false, "Idempotency-Key is not 1 to 255 visible ASCII characters"},
	{RateLimitExceeded, 429, false, "the account's window for this route is exhausted"},
	{InsufficientCredits, 402, false, "the balance is below the cost"},
	{RequestInProgress, 409, false, "the Idempotency-Key's attempt is pending"},
	{IdempotencyConflict, 409, false, "the Idempotency-Key completed with a different request"},
	{IdempotencyFailed, 409, false, "the Idempotency-Key's attempt failed and was refunded"},
	{RequestReconciliationPending, 503, false, "an attempt's outcome is being reconciled"},
	{LedgerUnavailable, 503, false, "the ledger failed; nothing was charged or changed"},
	{UpstreamNotConfigured, 503, false, "no upstream is configured"},
	{UpstreamTimeout, 504, true, "no upstream answer in time, or the upstream's own 408/504; refunded"},
	{UpstreamUnavailable, 502, false, "the upstream could not be reached; refunded"},
	{UpstreamResponseTooLarge, 502, false, "the upstream's body is over 4 MiB; refunded"},
	{UpstreamResponseUnsafe, 502, false, "the upstream's answer contained the operator's credential; refunded"},
	{UpstreamInvalidResponse, 502, false, "the upstream's answer is unusable; refunded"},
	{ProviderBusy, 0, true, "the upstream is busy (429, 503, 529); refunded"},
	{UpstreamRejectedRequest, 0, true, "the upstream refused the request (400, 422); refunded"},
	{UpstreamAuthFailed, 0, true, "the upstream refused the operator's credential (401, 403); refunded"},
	{UpstreamNotFound, 0, true, "the upstream answered 404; refunded"},
	{UpstreamError, 502, true, "any other upstream error; refunded"},
	{BearerNotAccepted, 401, false, "a session route got an Authorization header"},
	{OriginNotAllowed, 403, false, "a state-changing console request's Origin is not SERVICE_ORIGIN"},
	{SessionRequired, 401, false, "no live session cookie"},
	{InvalidRequest, 400, false, "the body is not the JSON object the route expects"},
	{InvalidKeyName, 400, false, "the key name is blank, too long, or holds a control character"},
	{KeyLimitReached, 409, false, "the account already has 20 active keys"},
	{KeyCreationRateLimited, 429, false, "10 keys were already created this minute"},
	{KeyNotFound, 404, false, "no active key with this id belongs to the account"},
	{InvalidEmail, 400, false, "the sign-in address is not an e-mail address"},
	{SigninRateLimited, 429, false, "too many sign-in requests for the address or from the client"},
	{MailNotConfigured, 503, false, "no mail endpoint is configured"},
	{MailFailed, 502, false, "the mail endpoint failed"},
	{SigninLinkInvalid, 400, false, "the sign-in link is unknown, used, expired or malformed"},
	{UnsupportedExtensionField, 400, false, "the edge and router upstreams take no top-level extension member"},
	{UnsupportedModel, 400, false, "the edge upstream cannot address this model name"},
	{ModelListingNotSupported, 501, false, "the router upstream offers no model list"},
}

// Status is the code's HTTP status from Errors; 0 for a code the platform
// only forwards with the upstream's status, and for an unknown code. A
// linear scan: it runs on error paths only, and TinyGo's maps are slow to
// build at start.
func (c Code) Status() int {
	for i := range Errors {
		if Errors[i].Code == c {
			return Errors[i].Status
		}
	}
	return 0
}
