// Package egress is the proxy through which a sandbox under egress reaches
// the hosts it declared, and the decisions it makes.
//
// A sandbox under egress keeps a network namespace with loopback only: no
// resolver, no route out. maka listens on 127.0.0.1:PORT inside that
// namespace and serves the socket from outside with a Proxy; nothing of
// maka's runs inside. The sandbox asks by HTTP CONNECT, by plain HTTP with
// an absolute URI, or by SOCKS5, and the Proxy decides every request
// against a List of host:port entries (ParseEntry): exact names, *.suffix
// wildcards, addresses and CIDR ranges, each with its port.
//
// The Proxy resolves names itself and connects to the addresses it checked,
// never to a name: a name that resolves to a loopback, private, link-local
// or otherwise non-public address is refused unless an address entry names
// that address, and an address asked for directly passes only an address
// entry. On port 443 the TLS ClientHello must name the host asked for
// (SNI), and a plain HTTP request's Host header must name the URI's host,
// so an allowed address cannot be used to reach another name behind it.
// Every refusal goes to a Recorder (the monitor records it as a
// violation), and the client sees it: an HTTP status with a one-line
// reason, or a SOCKS reply code; the connection is then closed.
//
// The policy's egress list is the ceiling of what a sandbox may declare
// (List.Within). The package knows nothing of containers: it serves any
// net.Listener, so all of it is tested on loopback.
package egress
