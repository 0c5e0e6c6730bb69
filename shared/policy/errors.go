// Package policy holds the platform's response rules: the error body and
// error headers (spec §4.8, §7), the headers every response carries, and the
// table of upstream headers that may be forwarded. Both the guests and the
// host use it, so a platform error looks the same wherever it is produced.
package policy

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/jsonw"
)

// Error sources of X-Service-Error-Source.
const (
	SourcePlatform = "platform"
	SourceUpstream = "upstream"
)

// Header names the platform sets, lower-case as on the ABI wire.
const (
	HContentType    = "content-type"
	HCacheControl   = "cache-control"
	HRequestID      = "x-request-id"
	HErrorSource    = "x-service-error-source"
	HErrorCode      = "x-service-error-code"
	HRetryAfter     = "retry-after"
	HAllow          = "allow"
	HResponseMode   = "x-service-response-mode"
	HServiceCredits = "x-service-credits"
)

// JSONType is the Content-Type of every JSON body the platform writes.
const JSONType = "application/json; charset=utf-8"

// Platform error codes produced outside any one function (schema/errors.md
// lists every code).
const (
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeInternal         = "internal_error"
	CodeTimeout          = "function_timeout"
	CodeOverloaded       = "overloaded"
	CodeUnavailable      = "function_unavailable"
)

// Error builds a platform error response: the documented body
// {"error":{"code":…,"message":…}} with X-Service-Error-Source: platform and
// X-Service-Error-Code set to code.
func Error(status int, code, message string) abi.Response {
	var w jsonw.Writer
	w.Open('{')
	w.Key("error")
	w.Open('{')
	w.FieldString("code", code)
	w.FieldString("message", message)
	w.Close('}')
	w.Close('}')
	return abi.Response{
		Status: status,
		Headers: abi.Headers{
			{Name: HContentType, Value: JSONType},
			{Name: HErrorSource, Value: SourcePlatform},
			{Name: HErrorCode, Value: code},
		},
		Body: w.B,
	}
}

// JSON builds a success response with a JSON body.
func JSON(status int, body []byte) abi.Response {
	return abi.Response{
		Status:  status,
		Headers: abi.Headers{{Name: HContentType, Value: JSONType}},
		Body:    body,
	}
}
