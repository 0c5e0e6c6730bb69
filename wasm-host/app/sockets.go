package app

import (
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/runtime"
)

// parkedOnServer is how many instances a function keeps per run slot on a
// remote ledger, where a call parks for a round trip to the server: the
// writer groups what waits, so more parked calls mean fewer, larger
// requests, each with its fixed cost (runtime.Options.ParkedPerSlot). On
// the embedded file a round trip is short and the default 4 suffices.
// Measured (wasm-host/loadbench/MEASUREMENTS.md): the sqld herd's p50
// +11.0 to +30.8 ms with 4, +9.8 to +12.9 ms with 16 and groups of 128.
const parkedOnServer = 16

// engineOptions: the socket build (GATEWAY_MODULES=socket) runs its modules
// with sockets and their environment; on a remote ledger more instances
// may park in its round trips.
func engineOptions(cfg *hostconfig.Config) runtime.Options {
	o := runtime.Options{CacheDir: cfg.CacheDir, QueueTimeout: cfg.QueueTimeout}
	if ledger.Remote(cfg.LedgerURL) {
		o.ParkedPerSlot = parkedOnServer
	}
	if cfg.Modules == hostconfig.ModulesSocket {
		o.Sockets = &runtime.Sockets{Environ: cfg.ModuleEnviron()}
	}
	return o
}
