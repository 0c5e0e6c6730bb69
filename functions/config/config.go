// Package config is the GET /api/service/config function (spec §2.8, §4.3):
// the public, credential-free configuration a console or client reads first.
package config

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
)

// Handle answers the public configuration. It is readable without
// authentication, so it names no credential, URL of an upstream or ledger.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	status := "ready"
	switch {
	case s.UpstreamKind == "":
		status = "no_upstream"
	case !ledgerReachable(env):
		status = string(contract.LedgerUnavailable)
	}

	var w jsonw.Writer
	w.Open('{')
	w.FieldString("contract", policy.Contract)
	w.FieldString("status", status)
	w.FieldBool("ready", status == "ready")
	w.FieldString("defaultModel", s.DefaultModel)
	w.Key("upstream")
	w.Open('{')
	if s.UpstreamKind == "" {
		w.Key("kind")
		w.Null()
		w.Key("responseMode")
		w.Null()
	} else {
		w.FieldString("kind", s.UpstreamKind)
		w.FieldString("responseMode", settings.ResponseMode(s.UpstreamKind))
	}
	w.FieldBool("emulator", s.Emulator)
	w.Close('}')
	w.FieldInt("welcomeCredits", int64(s.WelcomeCredits))
	w.FieldBool("billingAvailable", s.UpstreamKind != "")
	w.Key("docsUrl")
	if s.DocsURL == "" {
		w.Null()
	} else {
		w.String(s.DocsURL)
	}
	w.FieldInt("rateLimitPerMinute", int64(s.RateLimit))
	w.Key("limits")
	w.Open('{')
	w.FieldInt("bytes", policy.MaxBodyBytes)
	w.FieldInt("questions", policy.MaxQuestions)
	w.FieldInt("choiceOptions", policy.MaxChoiceOptions)
	w.FieldInt("scoreLevels", policy.MaxScoreLevels)
	w.FieldInt("depth", policy.MaxDepth)
	w.Close('}')
	w.Close('}')
	return policy.JSON(200, w.B)
}

func ledgerReachable(env *platform.Env) bool {
	res, err := env.Ledger.Exec(&abi.Batch{Steps: []abi.Statement{{SQL: "SELECT 1"}}})
	return err == nil && res.Err == ""
}
