package hosttest

import (
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/testkit/testenv"
)

// useSocketBuild runs the host on the socket build (TEST_MODULES=socket,
// make test): the same stories against modules that reach a real sqld and
// the fakes themselves, over sockets. A test that names an embedded ledger
// is about the ABI build's host and is skipped.
func useSocketBuild(t testing.TB, e, env map[string]string) {
	t.Helper()
	if strings.HasPrefix(env["LIBSQL_URL"], "file:") {
		t.Skip("the socket build reaches its ledger over HTTP; this test names an embedded one")
	}
	e["GATEWAY_MODULES"] = "socket"
	root := testenv.Root(t)
	if _, set := env["GATEWAY_FUNCTIONS_DIR"]; !set {
		e["GATEWAY_FUNCTIONS_DIR"] = filepath.Join(root, "build", "functions-socket")
	}
	// One compilation cache for every test, so wazero compiles each 14 MB
	// module once rather than once a test (or a package).
	if _, set := env["GATEWAY_CACHE_DIR"]; !set {
		e["GATEWAY_CACHE_DIR"] = filepath.Join(root, "build", "test-data-socket", "wazero-cache")
	}
}
