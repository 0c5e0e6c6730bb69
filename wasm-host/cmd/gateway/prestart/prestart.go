// Package prestart begins compiling the decision module while the gateway
// binary is still initialising its packages, for `gateway serve` only
// (runtime.Prestart says why). Go initialises a package once its imports
// are, and, of those ready, the one whose path sorts first: this one's are
// the settings and the runtime, so it runs right after wazero's packages,
// ahead of the HTTP server's, the metrics' and the ledger's, and the
// compile overlaps them and main's start on the other core.
//
// It reads the same settings as serve and makes the engine's runtime with
// the same options (wasm-host/app, engineOptions); when serve's settings
// turn out to differ, or the environment is wrong, the engine compiles as
// without it, and serve reports the error.
package prestart

import (
	"os"
	"path/filepath"

	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
)

func init() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	cfg, err := hostconfig.FromEnv()
	if err != nil || cfg.Modules == hostconfig.ModulesSocket {
		return
	}
	first := routes.Functions(routes.Table)[0]
	runtime.Prestart(runtime.Options{CacheDir: cfg.CacheDir}, filepath.Join(cfg.FunctionsDir, first+".wasm"))
}
