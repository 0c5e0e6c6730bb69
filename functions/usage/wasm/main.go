//go:build wasip1

// Command wasm is the usage function's module entry point.
package main

import (
	"decisiongateway/functions/usage"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(usage.Handle) }

func main() {}
