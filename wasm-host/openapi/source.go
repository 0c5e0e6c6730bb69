package openapi

import "decisiongateway/shared/contract"

// Source is the contract data the document is generated from: the route
// table and the error codes (FromContract).
type Source struct {
	Routes []Route
	Errors []ErrorCode
}

// Route is one row of the route table.
type Route struct {
	Method, Pattern, Function string
	Auth                      Auth
	MaxBody                   int64
}

// Auth is the credential a route asks for.
type Auth string

// The route credentials (shared/contract.Auth).
const (
	Public  Auth = "public"
	APIKey  Auth = "api_key"
	Session Auth = "session"
)

// ErrorCode is one platform error code.
type ErrorCode struct {
	Code string
	// Status is the HTTP status the platform answers it with; 0 when it is
	// only ever sent with the upstream's status.
	Status int
	// Forwarded: the code also classifies an upstream's error, which keeps
	// the upstream's status and body (spec §7 rule 1).
	Forwarded bool
	Meaning   string
}

// FromContract builds the source from shared/contract: its route table
// and its error table, the data both hosts and schema/errors.md are held to.
func FromContract() Source {
	var src Source
	for _, r := range contract.Routes {
		src.Routes = append(src.Routes, Route{Method: r.Method, Pattern: r.Pattern, Function: r.Function, Auth: Auth(r.Auth), MaxBody: r.MaxBody})
	}
	for _, e := range contract.Errors {
		src.Errors = append(src.Errors, ErrorCode{Code: string(e.Code), Status: e.Status, Forwarded: e.Forwarded, Meaning: e.Meaning})
	}
	return src
}
