// The route table of the Workers shim, in the shape of the wazero host's
// (wasm-host/routes: method, pattern, function, maxBody) so that it can be
// generated from `gateway routes`. Keep it data: matching lives in router.js.
//
// Each .wasm import is a compiled WebAssembly.Module, loaded by the
// CompiledWasm rule of wrangler.toml from the shared build output.

import config from "../../build/functions/config.wasm";

/** Compiled function modules by name (the file name under build/functions). */
export const modules = { config };

/**
 * table lists every route. A pattern segment starting with ':' matches any
 * one non-empty segment; maxBody 0 means the host's default.
 */
export const table = [
  { method: "GET", pattern: "/api/service/config", function: "config", maxBody: 0 },
];
