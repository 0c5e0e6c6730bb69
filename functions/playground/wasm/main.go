//go:build wasip1

// Command wasm is the playground function's module entry point.
package main

import (
	"decisiongateway/functions/playground"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(playground.Handle) }

func main() {}
