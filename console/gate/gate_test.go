package gate

import (
	"errors"
	"fmt"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/settings"
)

// Every account error has its console answer, and anything else (a
// ledger failure, wrapped or not) is 503 ledger_unavailable with a retry.
func TestFailureMapsEachAccountError(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   contract.Code
		retry  string
	}{
		{&accounts.RateLimited{Scope: "keycreate", RetryAfter: 7}, 429, contract.KeyCreationRateLimited, "7"},
		{&accounts.RateLimited{Scope: "signin-ip", RetryAfter: 0}, 429, contract.SigninRateLimited, "1"},
		{&accounts.RateLimited{Scope: "signin-address", RetryAfter: 900}, 429, contract.SigninRateLimited, "900"},
		{accounts.ErrInvalidEmail, 400, contract.InvalidEmail, ""},
		{accounts.ErrInvalidName, 400, contract.InvalidKeyName, ""},
		{accounts.ErrKeyLimit, 409, contract.KeyLimitReached, ""},
		{accounts.ErrKeyNotFound, 404, contract.KeyNotFound, ""},
		{&batch.Error{Msg: "database is locked"}, 503, contract.LedgerUnavailable, "1"},
		{fmt.Errorf("create: %w", &batch.Error{Msg: "x"}), 503, contract.LedgerUnavailable, "1"},
		{errors.New("anything else"), 503, contract.LedgerUnavailable, "1"},
	} {
		r := Failure(c.err)
		if r.Status != c.status || r.Headers.Get("x-service-error-code") != string(c.code) || r.Headers.Get("retry-after") != c.retry {
			t.Errorf("%v: %d %q retry %q, want %d %q %q", c.err, r.Status, r.Headers.Get("x-service-error-code"), r.Headers.Get("retry-after"), c.status, c.code, c.retry)
		}
	}
}

// A write passes only with exactly one Origin equal to SERVICE_ORIGIN.
func TestCheckOriginWantsExactlyOneExactOrigin(t *testing.T) {
	s := settings.Settings{Origin: "https://console.example"}
	for _, c := range []struct {
		origins []string
		ok      bool
	}{
		{[]string{"https://console.example"}, true},
		{nil, false},
		{[]string{"https://console.example/"}, false},
		{[]string{"https://console.example.evil"}, false},
		{[]string{"http://console.example"}, false},
		{[]string{"https://console.example", "https://console.example"}, false},
	} {
		var req abi.Request
		for _, o := range c.origins {
			req.Headers = append(req.Headers, abi.Header{Name: "origin", Value: o})
		}
		if r, ok := CheckOrigin(&s, &req); ok != c.ok || (!ok && (r.Status != 403 || r.Headers.Get("x-service-error-code") != string(contract.OriginNotAllowed))) {
			t.Errorf("%q: ok %v status %d, want ok %v", c.origins, ok, r.Status, c.ok)
		}
	}
}
