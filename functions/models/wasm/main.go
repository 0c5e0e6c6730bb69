//go:build wasip1

// Command wasm is the models function's module entry point.
package main

import (
	"decisiongateway/functions/models"
	"decisiongateway/shared/guest"
)

func init() { guest.Serve(models.Handle) }

func main() {}
