//go:build wasip1 && socket && !getaddrinfo

package guest

// A socket build must be compiled with the getaddrinfo tag as well
// (-tags socket,getaddrinfo; scripts/build-functions.sh): without it,
// github.com/stealthrocket/net resolves names with Go's own resolver,
// which on wasip1 can read neither /etc/hosts nor /etc/resolv.conf and
// asks a DNS server on [::1]:53, so no name resolves, not even localhost,
// and a ledger or upstream named by host (Turso, a vendor's API) cannot be
// reached. With it, names go to the runtime's sock_getaddrinfo. This
// declaration stops a build without the tag here, rather than at the
// first request.
var _ = build_socket_modules_with_tags_socket_and_getaddrinfo
