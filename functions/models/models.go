// Package models is GET /v1/models (spec §4.2, §8): the upstream's live
// model list for a caller with a platform API key. It reserves no credits
// and records no decision; it counts on its own per-account window (60 a
// minute by default), so listing models never eats into decision capacity.
package models

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/upstream"
)

// Scope names the listing's rate counter, apart from the decision counter.
const Scope = "models"

// Handle: authenticate the key and count the attempt (one ledger batch),
// then ask the configured upstream kind for its list.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	if req.Resume != nil {
		// The upstream's list, for a caller authorised before the call.
		return answer(env, req.Resume)
	}
	s := settings.Read(env.Config)
	now := time.Now()
	tok, account, refusal := policy.APIKey(req)
	if refusal != nil {
		if a, limited := ledgerq.CountRefusedKey(env.Ledger, req, s.AuthRateLimit, now); limited {
			resp := policy.Error(contract.AuthRateLimited, "too many authentication attempts from this address")
			resp.Headers.Set(policy.HRetryAfter, a.Window.RetryAfter(now))
			return resp
		}
		return *refusal
	}
	a, rate, err := ledgerq.AuthorizeKey(env.Ledger,
		&ledgerq.Principal{AccountID: account, KeyHash: keys.Hash(tok), IPHash: keys.HashClient(req.ClientAddr), AuthLimit: s.AuthRateLimit},
		Scope, s.ModelsRateLimit, now)
	switch {
	case err != nil:
		env.Error("model listing: authentication failed", "error", err.Error())
		return policy.Error(contract.LedgerUnavailable, "the ledger is unavailable")
	case a.RateLimited:
		resp := policy.Error(contract.AuthRateLimited, "too many authentication attempts from this address")
		resp.Headers.Set(policy.HRetryAfter, a.Window.RetryAfter(now))
		return resp
	case !a.OK:
		return policy.Unauthorized(contract.InvalidAPIKey, "the API key is unknown or revoked")
	case rate.Exceeded():
		resp := policy.Error(contract.RateLimitExceeded, "the account's model listing limit for this minute is exhausted")
		resp.Headers.Set(policy.HRetryAfter, rate.Window.RetryAfter(now))
		return resp
	}

	adapter := upstream.For(&s)
	if adapter == nil {
		return withRate(policy.Error(contract.UpstreamNotConfigured, "no upstream provider is configured on this deployment"), rate)
	}
	// A listing from the upstream is an outbound call: the host makes it
	// while no instance waits (schema/abi.md, "Awaiting").
	call, resp := adapter.Models(nil)
	if call != nil {
		return abi.Response{Await: &abi.Await{Fetch: call, State: batch.AppendRate(nil, rate)}}
	}
	return withRate(resp, rate)
}

// answer maps the upstream's list once the host has it.
func answer(env *platform.Env, r *abi.Resume) abi.Response {
	rate, _, ok := batch.ReadRate(r.State)
	s := settings.Read(env.Config)
	adapter := upstream.For(&s)
	if !ok || adapter == nil {
		return policy.Error(contract.InternalError, "the model listing's saved state could not be read")
	}
	_, resp := adapter.Models(r)
	return withRate(resp, rate)
}

func withRate(resp abi.Response, rate batch.Rate) abi.Response {
	rate.SetHeaders(&resp.Headers)
	return resp
}
