//go:build wasip1

// Command canaryv1 is the first of two builds of one function for the canary
// tests (wasm-host/canary): it answers every request with 200 and its name,
// so a test can tell which build served a request from the body alone.
package main

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/guest"
	"decisiongateway/shared/platform"
)

func init() { guest.Serve(handle) }

func main() {}

func handle(env *platform.Env, req *abi.Request) abi.Response {
	return abi.Response{Status: 200, Headers: abi.Headers{{Name: "content-type", Value: "text/plain"}}, Body: []byte("v1")}
}
