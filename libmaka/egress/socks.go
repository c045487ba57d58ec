package egress

import (
	"fmt"
	"io"
	"net/netip"
)

// SOCKS5 (RFC 1928) as the proxy serves it: no authentication, CONNECT
// only, to a name (socks5h: the proxy resolves it), an IPv4 or an IPv6
// address.
const (
	socksVersion     = 5
	socksNoAuth      = 0
	socksNoMethod    = 0xff
	socksConnect     = 1
	socksAtypIPv4    = 1
	socksAtypName    = 3
	socksAtypIPv6    = 4
	socksOK          = 0
	socksFailure     = 1 // general failure
	socksNotAllowed  = 2 // not allowed by ruleset
	socksHostUnreach = 4
	socksRefused     = 5 // connection refused
	socksBadCommand  = 7
	socksBadAtyp     = 8
)

// socksCode is the reply code of a refusal's reason.
func socksCode(reason string) byte {
	switch reason {
	case ReasonBadRequest, ReasonTimeout:
		return socksFailure
	case ReasonResolveFailed:
		return socksHostUnreach
	case ReasonDialFailed:
		return socksRefused
	}
	return socksNotAllowed
}

// socksReply is a reply with the code and an unspecified bound address.
func socksReply(code byte) []byte {
	return []byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// refuseSOCKS records r and answers it with code, then closes.
func (s *session) refuseSOCKS(code byte, r Refusal) {
	s.record(r)
	s.replyAndClose(socksReply(code))
}

// readFull reads the next part of the SOCKS exchange; a failure is
// recorded (a client that stops mid-request, or the deadline) and the
// connection closed.
func (s *session) readFull(b []byte) bool {
	if _, err := io.ReadFull(s.br, b); err != nil {
		if isTimeout(err) {
			s.record(Refusal{Reason: ReasonTimeout, Detail: fmt.Sprintf("no whole SOCKS request within %s", s.p.cfg.RequestTimeout)})
		} else if !s.isClosed() {
			s.record(Refusal{Reason: ReasonBadRequest, Detail: "the client stopped mid-request"})
		}
		return false
	}
	return true
}

func (s *session) socks() {
	var hdr [2]byte
	if !s.readFull(hdr[:]) {
		return
	}
	methods := make([]byte, hdr[1])
	if !s.readFull(methods) {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		s.record(Refusal{Reason: ReasonUnsupported, Detail: "no acceptable SOCKS method: only no authentication (0) is served"})
		s.replyAndClose([]byte{socksVersion, socksNoMethod})
		return
	}
	if err := s.writeClient([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	var req [4]byte // VER CMD RSV ATYP
	if !s.readFull(req[:]) {
		return
	}
	if req[0] != socksVersion {
		s.refuseSOCKS(socksFailure, Refusal{Reason: ReasonBadRequest, Detail: fmt.Sprintf("SOCKS request of version %d", req[0])})
		return
	}
	if req[1] != socksConnect {
		s.refuseSOCKS(socksBadCommand, Refusal{Reason: ReasonUnsupported, Detail: fmt.Sprintf("SOCKS command %d: only CONNECT (1) is served", req[1])})
		return
	}
	var host string
	switch req[3] {
	case socksAtypIPv4:
		var a [4]byte
		if !s.readFull(a[:]) {
			return
		}
		host = netip.AddrFrom4(a).String()
	case socksAtypIPv6:
		var a [16]byte
		if !s.readFull(a[:]) {
			return
		}
		host = netip.AddrFrom16(a).String()
	case socksAtypName:
		var n [1]byte
		if !s.readFull(n[:]) {
			return
		}
		name := make([]byte, n[0])
		if !s.readFull(name) {
			return
		}
		host = string(name)
	default:
		s.refuseSOCKS(socksBadAtyp, Refusal{Reason: ReasonUnsupported, Detail: fmt.Sprintf("SOCKS address type %d", req[3])})
		return
	}
	var pb [2]byte
	if !s.readFull(pb[:]) {
		return
	}
	port := int(pb[0])<<8 | int(pb[1])
	if port == 0 {
		s.refuseSOCKS(socksFailure, Refusal{Reason: ReasonBadRequest, Host: host, Detail: "port 0"})
		return
	}
	t, r := s.target(host, port)
	if r != nil {
		s.refuseSOCKS(socksFailure, *r)
		return
	}
	s.connectAndTunnel(t, socksReply(socksOK),
		func(r Refusal) { s.refuseSOCKS(socksCode(r.Reason), r) })
}
