package egress

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// The TLS ClientHello, as far as the proxy reads it: enough to find the
// server name (RFC 6066 server_name, RFC 8446 section 4.1.2), bounded, and
// kept byte for byte so that it can be replayed to the upstream.

const (
	recordHeaderLen = 5
	recordHandshake = 22
	maxRecordLen    = 1 << 14 // RFC 8446 5.1: a plaintext fragment
	handshakeHello  = 1
	extServerName   = 0
	serverNameHost  = 0
)

// errNotHello: the bytes are not a TLS ClientHello (another protocol, a
// truncated or malformed hello, or one larger than the bound).
var errNotHello = errors.New("not a TLS ClientHello")

// readClientHello reads TLS records from r until they hold one whole
// handshake message, at most limit bytes in all, and returns the bytes read
// (to replay) and the server name of the ClientHello ("" without one). The
// caller bounds the time.
func readClientHello(r io.Reader, limit int) (raw []byte, sni string, err error) {
	var msg []byte // the handshake bytes, across records
	need := -1     // the handshake message's length with its header, once known
	for need < 0 || len(msg) < need {
		if len(raw)+recordHeaderLen > limit {
			return raw, "", fmt.Errorf("%w: more than %d bytes", errNotHello, limit)
		}
		var hdr [recordHeaderLen]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return raw, "", readErr(err)
		}
		raw = append(raw, hdr[:]...)
		if hdr[0] != recordHandshake {
			return raw, "", fmt.Errorf("%w: record type %d", errNotHello, hdr[0])
		}
		if hdr[1] != 3 {
			return raw, "", fmt.Errorf("%w: record version %d.%d", errNotHello, hdr[1], hdr[2])
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > maxRecordLen {
			return raw, "", fmt.Errorf("%w: record length %d", errNotHello, n)
		}
		if len(raw)+n > limit {
			return raw, "", fmt.Errorf("%w: more than %d bytes", errNotHello, limit)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start], "", readErr(err)
		}
		msg = append(msg, raw[start:]...)
		if need < 0 && len(msg) >= 4 {
			if msg[0] != handshakeHello {
				return raw, "", fmt.Errorf("%w: handshake type %d", errNotHello, msg[0])
			}
			need = 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if need > limit {
				return raw, "", fmt.Errorf("%w: a hello of %d bytes, more than %d", errNotHello, need, limit)
			}
		}
	}
	if len(msg) > need {
		// Another handshake message in the same flight: a client sends
		// nothing after its ClientHello before the server answers.
		return raw, "", fmt.Errorf("%w: bytes after the ClientHello", errNotHello)
	}
	sni, err = serverName(msg[4:need])
	return raw, sni, err
}

// readErr turns a short read into errNotHello (the client stopped
// mid-record) and keeps other errors (a deadline) as they are.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the client stopped after part of it", errNotHello)
	}
	return err
}

// reader is a bounds-checked cursor over a message.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(b[0])<<8 | int(b[1])
}

// vec8 and vec16: a vector with a one- or two-byte length.
func (r *reader) vec8() *reader {
	b := r.bytes(r.u8())
	return &reader{b: b, bad: r.bad}
}

func (r *reader) vec16() *reader {
	b := r.bytes(r.u16())
	return &reader{b: b, bad: r.bad}
}

// serverName returns the host_name of the server_name extension of a
// ClientHello's body ("" without the extension). Malformed bodies, repeated
// extensions and more than one host_name are errors: whatever the upstream
// would read differently from the proxy is refused.
func serverName(body []byte) (string, error) {
	r := &reader{b: body}
	r.bytes(2)  // legacy_version
	r.bytes(32) // random
	if sid := r.vec8(); len(sid.b) > 32 {
		return "", fmt.Errorf("%w: session id of %d bytes", errNotHello, len(sid.b))
	}
	if cs := r.vec16(); len(cs.b) < 2 || len(cs.b)%2 != 0 {
		return "", fmt.Errorf("%w: cipher suites", errNotHello)
	}
	if cm := r.vec8(); len(cm.b) < 1 {
		return "", fmt.Errorf("%w: compression methods", errNotHello)
	}
	if r.bad {
		return "", fmt.Errorf("%w: truncated", errNotHello)
	}
	if len(r.b) == 0 {
		return "", nil // no extensions (a pre-TLS 1.2 client)
	}
	exts := r.vec16()
	if r.bad || len(r.b) != 0 {
		return "", fmt.Errorf("%w: extensions", errNotHello)
	}
	seen := map[int]bool{}
	sni := ""
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.vec16()
		if exts.bad {
			return "", fmt.Errorf("%w: truncated extension", errNotHello)
		}
		if seen[typ] {
			return "", fmt.Errorf("%w: extension %d twice", errNotHello, typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		list := data.vec16()
		if data.bad || len(data.b) != 0 || len(list.b) == 0 {
			return "", fmt.Errorf("%w: server_name extension", errNotHello)
		}
		for len(list.b) > 0 {
			nameType := list.u8()
			name := list.vec16()
			if list.bad {
				return "", fmt.Errorf("%w: server_name extension", errNotHello)
			}
			if nameType != serverNameHost {
				continue
			}
			if sni != "" {
				return "", fmt.Errorf("%w: two host names", errNotHello)
			}
			if len(name.b) == 0 {
				return "", fmt.Errorf("%w: empty host name", errNotHello)
			}
			sni = string(name.b)
		}
	}
	return sni, nil
}

// sameName compares a ClientHello's server name with the (normalised) name
// asked for: case-insensitively, a trailing dot ignored.
func sameName(sni, name string) bool {
	return strings.EqualFold(strings.TrimSuffix(sni, "."), name)
}
