// Package buildinfo names the build of the running gateway, for
// `gateway --version` and the gateway_build_info metric.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Revision is set by the Makefile (-ldflags -X) to `git describe --always
// --dirty`: the project builds with GOFLAGS=-buildvcs=false in some
// environments, so the Go toolchain's own VCS stamp is not always there.
var Revision string

// Version is the build's revision: the one the Makefile stamped, else the
// toolchain's VCS stamp (vcs.revision, with +dirty for a modified tree),
// else the module version ("(devel)" for a plain `go build`).
func Version() string {
	if Revision != "" {
		return Revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		return strings.TrimSpace(rev[:min(len(rev), 12)]) + dirty
	}
	return bi.Main.Version
}

// GoVersion is the toolchain that built the binary.
func GoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}
