package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928), CONNECT only, no authentication. Written here rather
// than taken from a library: the server must hand the decision, the name
// resolution (on the host, after the decision) and the attribution to the
// proxy's one decide path, and must never resolve or dial by itself, which
// the libraries looked at do by default.
const (
	socksVersion  = 5
	socksNoAuth   = 0
	socksNoMethod = 0xff
	socksConnect  = 1
	atypIPv4      = 1
	atypDomain    = 3
	atypIPv6      = 4

	repSucceeded      = 0
	repGeneralFailure = 1
	repNotAllowed     = 2
	repHostUnreach    = 4
	repCmdUnsupported = 7
	repAtypUnsupport  = 8
)

func (p *Proxy) serveSOCKS(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(p.o.HeaderTimeout))
	br := bufio.NewReaderSize(c, 512)
	host, port, err := socksHandshake(br, c)
	if err != nil {
		return
	}
	target, rec := p.decide(context.Background(), "socks", host, port, endpointsOf(c))
	if !target.IsValid() {
		socksReply(c, repNotAllowed)
		return
	}
	start := time.Now()
	upc, err := p.dialChecked(context.Background(), target, rec, start)
	if err != nil {
		socksReply(c, repHostUnreach)
		return
	}
	defer upc.Close()
	if !p.add(upc) {
		return
	}
	defer p.remove(upc)
	if err := socksReply(c, repSucceeded); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	var pre int64
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := upc.Write(b); err != nil {
			return
		}
		pre = int64(n)
	}
	up, down := splice(c, upc)
	rec.BytesUp, rec.BytesDown, rec.Duration = up+pre, down, time.Since(start)
	p.report(rec)
}

var errSocks = errors.New("socks: bad request")

// socksHandshake reads the method negotiation and the request, answering
// the negotiation, and returns the requested host and port.
func socksHandshake(br *bufio.Reader, w io.Writer) (string, uint16, error) {
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return "", 0, err
	}
	if hdr[0] != socksVersion || hdr[1] == 0 {
		return "", 0, errSocks
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", 0, err
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == socksNoAuth
	}
	if !ok {
		_, _ = w.Write([]byte{socksVersion, socksNoMethod})
		return "", 0, errSocks
	}
	if _, err := w.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return "", 0, err
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(br, req); err != nil {
		return "", 0, err
	}
	if req[0] != socksVersion {
		return "", 0, errSocks
	}
	if req[1] != socksConnect {
		socksReply(w, repCmdUnsupported)
		return "", 0, errSocks
	}
	var host string
	switch req[3] {
	case atypIPv4, atypIPv6:
		n := 4
		if req[3] == atypIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, err
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case atypDomain:
		l, err := br.ReadByte()
		if err != nil {
			return "", 0, err
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, err
		}
		host = string(b)
	default:
		socksReply(w, repAtypUnsupport)
		return "", 0, errSocks
	}
	pb := make([]byte, 2)
	if _, err := io.ReadFull(br, pb); err != nil {
		return "", 0, err
	}
	return host, binary.BigEndian.Uint16(pb), nil
}

// socksReply answers a request; the bound address is reported as 0.0.0.0:0
// (clients do not use it for CONNECT).
func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
