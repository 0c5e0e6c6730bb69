package hosttest

import "os"

// SocketBuild reports whether the end-to-end tests run on the socket
// build's modules (TEST_MODULES=socket): a test of a property only the
// ABI build has (an instance freed while its upstream call is in flight)
// skips itself there.
func SocketBuild() bool { return os.Getenv("TEST_MODULES") == "socket" }
