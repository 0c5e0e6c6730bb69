package hostconfig

import "syscall"

// Why the host bounds its client connections (GATEWAY_MAX_CONNECTIONS).
//
// Every connection is a file descriptor, and so is everything a request in
// flight needs besides: its upstream connection, the ledger's files or its
// sqld stream, a module file being loaded. A flood of idle or slow
// connections took them all (accept4: too many open files), and then the
// decisions already running failed where they opened their upstream
// connection or the ledger its files (schema/abi.md, "Overload").
// GATEWAY_MAX_REQUESTS bounds requests, not connections: a connection that
// sends nothing is no request. So the listener stops accepting at the
// bound, and connections past it wait in the kernel's listen backlog until
// one closes (an idle one within GATEWAY_IDLE_TIMEOUT, a silent one within
// GATEWAY_READ_HEADER_TIMEOUT), as nginx's worker_connections does.

// fileReserve is the descriptors kept for what is not a client
// connection's: the ledger, modules and caches, the metrics listener.
const fileReserve = 256

// ConnectionsFor is the default bound for a process that may have files
// files open: half of what the reserve leaves, because each client connection
// may hold an upstream connection beside it (a request in flight's, or one
// kept idle after it); at least 16.
func ConnectionsFor(files uint64) int {
	n := 16
	if files > fileReserve+2*16 {
		n = int(min((files-fileReserve)/2, 1<<30))
	}
	return n
}

// Connections is the bound on client connections: the setting, or
// ConnectionsFor the process's open-file limit (Go raises the soft limit to
// the hard one at start).
func (c *Config) Connections() int {
	if c.MaxConnections > 0 {
		return c.MaxConnections
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ConnectionsFor(1024)
	}
	return ConnectionsFor(lim.Cur)
}
