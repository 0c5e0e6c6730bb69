// Package digest is the SHA-256 every route function uses: of API keys and
// client addresses (their stored form) and of canonical requests
// (idempotency fingerprints).
//
// In a function module (a TinyGo build) the host computes it through the
// `gateway.sha256` import (schema/abi.md): the module carries no SHA-256 of
// its own. Go's crypto/sha256 brings the FIPS module's packages with it
// (AES, GCM, SHA-3, SHA-512, a DRBG and their initialisers), a seventh of
// the decision module; every byte of a module is decoded and validated
// again on each host start, even from wazero's compilation cache, and the
// decision module's load is the cold start's critical path. The host's
// native hashing is also many times quicker than SHA-256 compiled to
// WebAssembly. Everywhere else (the hosts, tests, the socket build) it is
// crypto/sha256.
package digest
