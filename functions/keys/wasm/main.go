//go:build wasip1

// Command wasm is the keys function's module entry point.
package main

import (
	"decisiongateway/functions/keys"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(keys.Handle) }

func main() {}
