package policy

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/keys"
)

// Unauthorized is the 401 of a Bearer-key route.
func Unauthorized(code contract.Code, message string) abi.Response {
	resp := Error(code, message)
	resp.Headers.Set("www-authenticate", `Bearer realm="decision-gateway"`)
	return resp
}

// APIKey reads the platform API key from a request's Authorization header.
// A missing header, another scheme or a malformed key (shape or checksum)
// is refused here, before any ledger read; refusal is nil when the key is
// well formed. Whether it is live is for the ledger to say.
func APIKey(req *abi.Request) (secret, account string, refusal *abi.Response) {
	auth := req.Headers.Get("authorization")
	if auth == "" {
		r := Unauthorized(contract.MissingAPIKey, "send the API key as Authorization: Bearer <key>")
		return "", "", &r
	}
	tok, ok := keys.Bearer(auth)
	if !ok {
		r := Unauthorized(contract.InvalidAPIKey, "the Authorization header must be Bearer <API key>")
		return "", "", &r
	}
	account, ok = keys.Parse(keys.APIKey, tok)
	if !ok {
		r := Unauthorized(contract.InvalidAPIKey, "the API key is malformed")
		return "", "", &r
	}
	return tok, account, nil
}
