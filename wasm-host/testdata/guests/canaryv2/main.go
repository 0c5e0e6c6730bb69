//go:build wasip1

// Command canaryv2 is the second build of the canary tests' function: it
// answers like canaryv1 but with "v2", and it can be made to fail the two
// ways a bad release fails, so the tests can watch a canary being rolled
// back: /trap panics (a trap in the module), /error answers a 500 of its own.
package main

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/guest"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
)

func init() { guest.Serve(handle) }

func main() {}

func handle(env *platform.Env, req *abi.Request) abi.Response {
	switch req.Path {
	case "/trap":
		var m map[string]int
		m["boom"] = 1 // nil map write: a Go panic, a trap in the module
	case "/error":
		return policy.Error(contract.InternalError, "canaryv2 fails on purpose")
	}
	return abi.Response{Status: 200, Headers: abi.Headers{{Name: "content-type", Value: "text/plain"}}, Body: []byte("v2")}
}
