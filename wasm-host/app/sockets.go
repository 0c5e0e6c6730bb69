package app

import (
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/runtime"
)

// engineOptions: the socket build (GATEWAY_MODULES=socket) runs its modules
// with sockets and their environment.
func engineOptions(cfg *hostconfig.Config) runtime.Options {
	o := runtime.Options{CacheDir: cfg.CacheDir, QueueTimeout: cfg.QueueTimeout}
	if cfg.Modules == hostconfig.ModulesSocket {
		o.Sockets = &runtime.Sockets{Environ: cfg.ModuleEnviron()}
	}
	return o
}
