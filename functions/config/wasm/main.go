//go:build wasip1

// Command wasm is the config function's module entry point.
package main

import (
	"decisiongateway/functions/config"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(config.Handle) }

func main() {}
