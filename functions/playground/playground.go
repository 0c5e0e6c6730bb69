// Package playground is POST /api/service/playground (spec §4.7): the
// console's decision editor. After the session and exact-Origin checks it
// runs the very decision path of POST /v1/service, so the body, validation,
// upstream, limits, rate counter and credits are the same by construction.
package playground

import (
	"decisiongateway/console/gate"
	"decisiongateway/functions/decide"
	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// Handle serves one playground decision for the signed-in account.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	if req.Resume != nil {
		// The upstream's answer to a decision this function started: the
		// session and Origin were checked then.
		return decide.Resume(env, req)
	}
	g, resp, ok := gate.Check(env, req, true)
	if !ok {
		return resp
	}
	return decide.Run(env, req, decide.Caller{AccountID: g.Session.AccountID, Source: "playground"})
}
