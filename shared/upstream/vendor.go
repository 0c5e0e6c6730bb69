package upstream

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/canon"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/validate"
	"github.com/valyala/fastjson"
)

func init() {
	register(settings.KindVendor, func(s *settings.Settings) Adapter {
		return &vendor{base: s.UpstreamURL, timeoutMS: uint32(s.UpstreamTimeout() / time.Millisecond)}
	})
}

// MaxAnswerBytes bounds an upstream answer the gateway will read.
const MaxAnswerBytes = 4 << 20

// vendor is the vendor HTTP API, byte-faithful (spec §2.2 rules 3–4, §2.3
// rule 1): the request text goes up unchanged (or with the default model
// inserted into the root object and nothing else touched), and a valid
// success comes back byte for byte.
type vendor struct {
	base      string
	timeoutMS uint32
	buf       []byte
}

func (v *vendor) Mode() string { return "vendor-native" }

// Check accepts extension fields: the vendor path preserves them.
func (v *vendor) Check(*Call) *validate.Error { return nil }

func (v *vendor) Prepare(c *Call) (abi.Await, *Outcome) {
	body := c.Body
	if !c.Request.HasModel {
		v.buf = canon.InsertModel(v.buf[:0], c.Body, c.Request.InsertAt, c.Model)
		body = v.buf
	}
	return abi.Await{Fetch: jsonPost(v.base+"/service", body, v.timeoutMS)}, nil
}

func (v *vendor) Answer(c *Call, r *abi.Resume) Outcome {
	res, failed := fetched(r)
	if failed != nil {
		return *failed
	}
	return v.answer(c, res)
}

// answer classifies an HTTP answer from the vendor.
func (v *vendor) answer(c *Call, res *abi.FetchResponse) Outcome {
	jsonType := validate.IsJSONContentType(res.Headers.Joined("content-type"))
	switch {
	case res.Status >= 200 && res.Status < 300:
		// An answer the strict scan of ValidateAnswer accepts is JSON, so
		// only a refused one is asked whether it is JSON at all: that
		// decides between an unusable response and an invalid answer.
		var verr *validate.Error
		if jsonType {
			verr = c.Validator.ValidateAnswer(c.Request, res.Body)
		}
		if !jsonType || verr != nil && fastjson.ValidateBytes(res.Body) != nil {
			return platformFailure(contract.UpstreamInvalidResponse, "the upstream answered with something other than JSON", res.Headers)
		}
		if verr != nil {
			return platformFailure(verr.Code, verr.Message, res.Headers)
		}
		m := c.Validator.Answered()
		return Outcome{
			Status: res.Status, Headers: policy.ForwardUpstream(res.Headers, true), Body: res.Body,
			OK: true, Model: m.Model, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
		}
	case res.Status >= 400 && res.Status < 600 && jsonType && fastjson.ValidateBytes(res.Body) == nil:
		// A valid JSON error keeps its status and body (spec §7 rule 1).
		code := upstreamErrorCode(res.Status)
		h := policy.ForwardUpstream(res.Headers, true)
		h.Set(policy.HErrorSource, policy.SourceUpstream)
		h.Set(policy.HErrorCode, string(code))
		return Outcome{Status: res.Status, Headers: h, Body: res.Body, Code: code, Source: policy.SourceUpstream, InputTokens: -1, OutputTokens: -1}
	case res.Status == 429 || res.Status == 503:
		return platformFailureAs(res.Status, contract.ProviderBusy, "the upstream provider is busy; retry after the delay it gave", res.Headers)
	}
	// Redirects, informational codes and non-JSON errors are replaced.
	return platformFailure(contract.UpstreamInvalidResponse, "the upstream answered with an unusable response", res.Headers)
}

// Models returns the vendor's list unchanged in shape (spec §4.2 rule 2).
func (v *vendor) Models(r *abi.Resume) (*abi.FetchRequest, abi.Response) {
	if r == nil {
		return &abi.FetchRequest{
			Method: "GET", URL: v.base + "/models",
			Headers:    abi.Headers{{Name: "accept", Value: "application/json"}},
			MaxBytes:   MaxAnswerBytes,
			Credential: abi.CredentialUpstream,
		}, abi.Response{}
	}
	return nil, v.modelList(r)
}

// modelList classifies the vendor's answer to the listing as its answers to
// a decision are (spec §4.8, §7): a JSON list or JSON error keeps its status
// and body; a busy vendor without JSON is provider_busy at its status;
// redirects, informational codes and anything else not JSON are replaced.
func (v *vendor) modelList(r *abi.Resume) abi.Response {
	res, failed := fetched(r)
	if failed != nil {
		return abi.Response{Status: failed.Status, Headers: failed.Headers, Body: failed.Body}
	}
	isJSON := validate.IsJSONContentType(res.Headers.Joined("content-type")) && fastjson.ValidateBytes(res.Body) == nil
	var o Outcome
	switch {
	case isJSON && res.Status >= 200 && res.Status < 300:
		return abi.Response{Status: res.Status, Headers: policy.ForwardUpstream(res.Headers, true), Body: res.Body}
	case isJSON && res.Status >= 400 && res.Status < 600:
		h := policy.ForwardUpstream(res.Headers, true)
		h.Set(policy.HErrorSource, policy.SourceUpstream)
		h.Set(policy.HErrorCode, string(upstreamErrorCode(res.Status)))
		return abi.Response{Status: res.Status, Headers: h, Body: res.Body}
	case res.Status == 429 || res.Status == 503:
		o = platformFailureAs(res.Status, contract.ProviderBusy, "the upstream provider is busy; retry after the delay it gave", res.Headers)
	case res.Status >= 200 && res.Status < 300:
		o = platformFailure(contract.UpstreamInvalidResponse, "the upstream model list is not JSON", res.Headers)
	default:
		o = platformFailure(contract.UpstreamInvalidResponse, "the upstream answered the model list with an unusable response", res.Headers)
	}
	return abi.Response{Status: o.Status, Headers: o.Headers, Body: o.Body}
}
