// Package upstream turns a validated decision into a call to the operator's
// provider and the provider's answer into what the gateway returns. One
// Adapter per upstream kind (spec §1.3): vendor (byte-faithful HTTP),
// edge (the model binding), router (Chat Completions conversion). The
// decision function does accounting around an Adapter and never looks at a
// provider's wire format itself.
package upstream

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/validate"

	"github.com/valyala/fastjson"
)

// Call is one decision to make.
type Call struct {
	// Body is the validated request text as the client sent it.
	Body []byte
	// Request summarises Body; valid for the duration of the call.
	Request *validate.Request
	// Model is the effective model: the explicit one, or the default.
	Model string
	// Validator is the module's validator, for checking answers.
	Validator *validate.Validator
	// Tree is Body as the validator parsed it (ValidateTree), or nil: the
	// converting adapters read it instead of parsing Body again. It is nil
	// when the call is resumed, and the adapter parses Body itself.
	Tree *fastjson.Value
}

// Outcome is the answer to return and what accounting needs to know.
type Outcome struct {
	Status  int
	Headers abi.Headers // only what policy allows; never upstream cookies or auth
	Body    []byte
	// OK marks a validated success: the reservation is charged. Anything
	// else is refunded.
	OK bool
	// Code classifies a failure (X-Service-Error-Code); Source says whether
	// the body is the upstream's (upstream) or the platform's (platform).
	Code   contract.Code
	Source string
	// Model is the model the upstream resolved, when it said.
	Model string
	// InputTokens and OutputTokens are -1 when the upstream did not say.
	InputTokens, OutputTokens int64
}

// Adapter is one upstream kind.
type Adapter interface {
	// Mode is the X-Service-Response-Mode of successes.
	Mode() string
	// Check applies the kind's own request rules before anything is charged
	// (the edge and router kinds reject top-level extension fields).
	Check(c *Call) *validate.Error
	// Prepare returns the one outbound call that makes the decision, or the
	// Outcome to return when the request cannot be converted. The host
	// makes the call while no instance waits on it (schema/abi.md,
	// "Awaiting").
	Prepare(c *Call) (abi.Await, *Outcome)
	// Answer classifies the call's result. It may run on another instance
	// than Prepare did, so it relies on c and r alone. It never panics on
	// provider misbehaviour: every failure becomes an Outcome with OK false.
	Answer(c *Call, r *abi.Resume) Outcome
	// Models answers GET /v1/models (spec §4.2). Called with nil, it
	// returns either the answer or a call for the host to make (an Await,
	// as for decisions); called again with that call's result, the answer.
	Models(r *abi.Resume) (*abi.FetchRequest, abi.Response)
}

// registry maps an upstream kind to its constructor. Kinds other than
// vendor register themselves from their own files.
var registry = map[string]func(s *settings.Settings) Adapter{}

func register(kind string, f func(s *settings.Settings) Adapter) { registry[kind] = f }

// For returns the adapter of the configured kind, or nil when no upstream
// is configured. The edge kind needs no URL: on Workers its binding is
// env.AI, and a host without a binding answers the ai import with "denied".
func For(s *settings.Settings) Adapter {
	if f, ok := registry[s.UpstreamKind]; ok && (s.UpstreamURL != "" || s.UpstreamKind == settings.KindEdge) {
		return f(s)
	}
	return nil
}

// Decide makes a decision in one go: Prepare, the call, Answer. For native
// callers (tests, the emulator's checks); a module hands the call to its
// host instead.
func Decide(env *platform.Env, a Adapter, c *Call) Outcome {
	aw, failed := a.Prepare(c)
	if failed != nil {
		return *failed
	}
	res := env.Do(&aw)
	return a.Answer(c, &res)
}

// ListModels answers GET /v1/models in one go, for native callers.
func ListModels(env *platform.Env, a Adapter) abi.Response {
	call, resp := a.Models(nil)
	if call == nil {
		return resp
	}
	res := env.Do(&abi.Await{Fetch: call})
	_, resp = a.Models(&res)
	return resp
}

// platformFailure builds an Outcome for a failure the platform reports in
// its own words, keeping the upstream headers policy allows (Retry-After,
// tracking ids).
func platformFailure(code contract.Code, message string, upstream abi.Headers) Outcome {
	return platformFailureAs(code.Status(), code, message, upstream)
}

// platformFailureAs is platformFailure with the upstream's status, for the
// codes the contract marks Forwarded (provider_busy).
func platformFailureAs(status int, code contract.Code, message string, upstream abi.Headers) Outcome {
	resp := policy.ErrorAs(status, code, message)
	resp.Headers = append(resp.Headers, policy.ForwardUpstream(upstream, false)...)
	return Outcome{Status: status, Headers: resp.Headers, Body: resp.Body, Code: code, Source: policy.SourcePlatform, InputTokens: -1, OutputTokens: -1}
}

// fetchFailure maps a transport failure to a platform error (spec §7 rule 3:
// a timeout proves nothing about completion, but nothing was charged).
func fetchFailure(r *abi.FetchResponse) Outcome {
	switch r.ErrKind {
	case abi.FetchErrTimeout:
		return platformFailure(contract.UpstreamTimeout, "the upstream did not answer in time", nil)
	case abi.FetchErrTooLarge:
		return platformFailure(contract.UpstreamResponseTooLarge, "the upstream answer exceeded the size limit", nil)
	case abi.FetchErrCredentialLeak:
		// The answer echoed the operator's credential; the host dropped it
		// whole (spec §4.8 credential-safety exception).
		return platformFailure(contract.UpstreamResponseUnsafe, "the upstream answer was withheld because it contained a deployment credential", nil)
	}
	return platformFailure(contract.UpstreamUnavailable, "the upstream could not be reached", nil)
}

// jsonPost is a POST of a JSON body to the upstream with the operator's
// credential.
func jsonPost(url string, body []byte, timeoutMS uint32) *abi.FetchRequest {
	return &abi.FetchRequest{
		Method: "POST",
		URL:    url,
		Headers: abi.Headers{
			{Name: "content-type", Value: "application/json"},
			{Name: "accept", Value: "application/json"},
		},
		Body:       body,
		TimeoutMS:  timeoutMS,
		MaxBytes:   MaxAnswerBytes,
		Credential: abi.CredentialUpstream,
	}
}

// fetched is the HTTP answer of an awaited fetch, or the Outcome to return
// when there is none (a transport failure). An HTTP answer of any status is
// the caller's to classify.
func fetched(r *abi.Resume) (*abi.FetchResponse, *Outcome) {
	if r.Fetch == nil {
		o := platformFailure(contract.UpstreamUnavailable, "the upstream's answer could not be decoded", nil)
		return nil, &o
	}
	if r.Fetch.ErrKind != "" {
		o := fetchFailure(r.Fetch)
		return nil, &o
	}
	return r.Fetch, nil
}

// upstreamErrorCode classifies an upstream JSON error by status alone, never
// by its text (spec §7 rule 1).
func upstreamErrorCode(status int) contract.Code {
	switch {
	case status == 429 || status == 503 || status == 529:
		return contract.ProviderBusy
	case status == 400 || status == 422:
		return contract.UpstreamRejectedRequest
	case status == 401 || status == 403:
		return contract.UpstreamAuthFailed
	case status == 404:
		return contract.UpstreamNotFound
	case status == 408 || status == 504:
		return contract.UpstreamTimeout
	}
	return contract.UpstreamError
}
