// Package contract is the one place for the contract both hosts obey, as
// data: the error codes with their statuses (errors.go), the settings with
// their defaults, kinds and secrecy (settings.go), the route table
// (routes.go) and the ledger's statement-shape words (sqlshape.go).
//
// The wazero host, the guests and the Workers generator read these tables
// directly; the Workers shim gets them generated into
// wrangler-compat/src/contract.gen.js (`make contract-js`; a test fails when
// that file is stale); schema/errors.md and schema/settings.md are checked
// against them by tests. Adding a code, a setting or a route is a change
// here plus its documentation row.
//
// The package is linked into every function module, so it holds data and
// trivial lookups only: no parsing, no heavy imports. The checks of each
// setting kind live with the hosts (wasm-host/hostconfig,
// wrangler-compat/src/settings.js), which run them once at start.
package contract
