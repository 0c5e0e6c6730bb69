// Package policy holds the platform's response rules: the error body and
// error headers (spec §4.8, §7), the headers every response carries, and the
// table of upstream headers that may be forwarded. Both the guests and the
// host use it, so a platform error looks the same wherever it is produced.
package policy

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
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

// Error builds a platform error response with the code's status from the
// contract's table: the documented body {"error":{"code":…,"message":…}}
// with X-Service-Error-Source: platform and X-Service-Error-Code set to
// code. A call site names the code; it never picks a status.
func Error(code contract.Code, message string) abi.Response {
	return ErrorAs(code.Status(), code, message)
}

// ErrorAs is Error with the status of an upstream answer, for the codes
// the table marks Forwarded (provider_busy keeps the upstream's 429, 503
// or 529). Every other caller uses Error.
func ErrorAs(status int, code contract.Code, message string) abi.Response {
	var w jsonw.Writer
	w.Open('{')
	w.Key("error")
	w.Open('{')
	w.FieldString("code", string(code))
	w.FieldString("message", message)
	w.Close('}')
	w.Close('}')
	return abi.Response{
		Status: status,
		Headers: abi.Headers{
			{Name: HContentType, Value: JSONType},
			{Name: HErrorSource, Value: SourcePlatform},
			{Name: HErrorCode, Value: string(code)},
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
