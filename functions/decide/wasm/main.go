//go:build wasip1

// Command wasm is the decide function's module entry point.
package main

import (
	"decisiongateway/functions/decide"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(decide.Handle) }

func main() {}
