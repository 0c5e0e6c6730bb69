//go:build wasip1

// Command wasm is the auth function's module entry point.
package main

import (
	"decisiongateway/functions/auth"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(auth.Handle) }

func main() {}
