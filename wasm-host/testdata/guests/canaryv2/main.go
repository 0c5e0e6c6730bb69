//go:build wasip1

// Command canaryv2 is the second build of the canary tests' function: it
// answers like canaryv1 but with "v2", and it can be made to fail the two
// ways a bad release fails, so the tests can watch a canary being rolled
// back: /trap panics (a trap in the module), /error answers a 500 of its own.
// /slow answers correctly but only after tens of milliseconds of work, the
// regression a latency check has to catch; /bad answers 400, as a build that
// refuses valid requests would. The header X-Test-Behaviour: trap|error|bad|slow
// asks for the same on any path.
package main

import (
	"strconv"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/guest"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
)

func init() { guest.Serve(handle) }

func main() {}

func handle(env *platform.Env, req *abi.Request) abi.Response {
	path := req.Path
	if b := req.Headers.Get("x-test-behaviour"); b != "" {
		path = "/" + b // the same failures on a routed path (Workers route before the module)
	}
	switch path {
	case "/trap":
		var m map[string]int
		m["boom"] = 1 // nil map write: a Go panic, a trap in the module
	case "/error":
		return policy.Error(contract.InternalError, "canaryv2 fails on purpose")
	case "/bad":
		return policy.Error(contract.InvalidRequest, "canaryv2 refuses on purpose")
	case "/slow":
		x := uint64(len(req.Path)) | 1
		for range 6_000_000 { // xorshift: CPU work the compiler cannot drop
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		return abi.Response{Status: 200, Headers: abi.Headers{{Name: "x-work", Value: strconv.FormatUint(x, 16)}}, Body: []byte("v2")}
	}
	return abi.Response{Status: 200, Headers: abi.Headers{{Name: "content-type", Value: "text/plain"}}, Body: []byte("v2")}
}
