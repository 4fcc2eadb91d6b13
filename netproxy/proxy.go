package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// Owner is the process behind a connection, as the host found it.
type Owner struct {
	Pid int
	// Argv is the argv the process was started with, as the supervisor
	// decided it at its exec (not /proc/PID/cmdline, which a process can
	// rewrite); empty when unknown.
	Argv []string
	// Programs are the programs the process and its ancestors were proven
	// to run (policy.NetQuery.Programs).
	Programs []string
}

// Record is one decided connection (or one plain HTTP request). A refused
// connection is reported when it is refused; an allowed one when it ends,
// with its byte counts and duration.
type Record struct {
	Time time.Time
	// Proto is "http" (a plain HTTP request), "connect" or "socks".
	Proto string
	Host  string
	Port  uint16
	// Addr is the address connected to (empty when none was).
	Addr     string
	Decision policy.Decision
	// Result is the rule decision (Rule nil: no rule matched).
	Result policy.NetResult
	// Reason, when set, says why an allowed connection was refused anyway
	// or failed: a non-global address, a name that did not resolve, a
	// dial error.
	Reason    string
	Owner     Owner
	BytesUp   int64
	BytesDown int64
	Duration  time.Duration
}

// RuleText describes the rule (or reason) behind the record's decision.
func (r *Record) RuleText() string {
	if r.Reason != "" && r.Decision == policy.Deny {
		return r.Reason
	}
	return r.Result.RuleText()
}

// Refused reports whether cordon refused the connection.
func (r *Record) Refused() bool { return r.Decision == policy.Deny }

// Options configures a Proxy.
type Options struct {
	// Policy holds the network rules; nil refuses everything.
	Policy *policy.NetPolicy
	// Owner finds the process holding the sandbox's end of a connection
	// (ends: the sandbox socket's address and the listener's). nil, or a
	// zero Owner: unknown, and rules limited with For do not match.
	Owner func(ends Endpoints) Owner
	// RequireOwner refuses a connection whose Owner is unknown (zero
	// Pid): where the listeners are on the host's loopback (the landlock
	// tier), any program of the host can reach them, and only a
	// connection the supervisor made for the sandbox has an owner.
	RequireOwner bool
	// Ask answers ask decisions; nil denies them.
	Ask func(r *Record) bool
	// OnRecord receives every record; it must not block for long.
	OnRecord func(r *Record)
	// Resolve resolves a name on the host (default: the system resolver).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Local reports whether an address is the host's own (default:
	// HostLocal): such an address is refused unless a rule names it
	// exactly, as a non-global one is.
	Local func(netip.Addr) bool
	// Dial connects to a checked address (default: net.Dialer).
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// MaxConns bounds the connections served at once (default 256):
	// more wait in the listener's backlog.
	MaxConns int
	// HeaderTimeout bounds how long a client may take to send a request's
	// header or a SOCKS handshake (default 10 s): a slowloris gives up
	// its slot.
	HeaderTimeout time.Duration
}

// Proxy serves the sandbox's proxy listeners.
type Proxy struct {
	o     Options
	slots chan struct{}
	http  *http.Server
	// upstream makes plain HTTP requests to the address decided for each.
	upstream *http.Transport

	mu        sync.Mutex
	listeners []net.Listener        // guarded by mu
	conns     map[net.Conn]struct{} // guarded by mu: SOCKS and tunnels in flight
	closed    bool                  // guarded by mu
	wg        sync.WaitGroup
}

// New returns a Proxy; Serve each listener with ServeHTTP or ServeSOCKS.
func New(o Options) *Proxy {
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = 10 * time.Second
	}
	if o.Resolve == nil {
		o.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if o.Local == nil {
		o.Local = HostLocal
	}
	if o.Dial == nil {
		d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
		o.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a.String())
		}
	}
	p := &Proxy{o: o, slots: make(chan struct{}, o.MaxConns), conns: map[net.Conn]struct{}{}}
	p.upstream = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			a, ok := ctx.Value(dialKey{}).(netip.AddrPort)
			if !ok {
				return nil, errors.New("no checked address for this request")
			}
			return o.Dial(ctx, a)
		},
		// Each request is dialed to the address checked for it: a pooled
		// connection would be one checked for another request.
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 0,
		Proxy:                 nil,
	}
	p.http = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: o.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, endpointsOf(c))
		},
		// Malformed requests are the workload's business; they get their
		// HTTP error, not a line on the user's terminal.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return p
}

type dialKey struct{}
type peerKey struct{}

// Endpoints are a proxy connection's two ends: Peer the sandbox's socket,
// Local the proxy's listener that accepted it. A connection is identified
// by both: one local port of the sandbox's may serve two connections, one
// to each listener (the kernel shares an ephemeral port between
// destinations), so the peer alone can name another process's socket.
type Endpoints struct {
	Peer, Local netip.AddrPort
}

func endpointsOf(c net.Conn) Endpoints {
	return Endpoints{Peer: peerOf(c.RemoteAddr()), Local: peerOf(c.LocalAddr())}
}

// limitListener hands out at most cap(slots) connections at once; the
// rest wait in the kernel's backlog.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (p *Proxy) track(l net.Listener) (net.Listener, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return nil, net.ErrClosed
	}
	p.listeners = append(p.listeners, l)
	return &limitListener{Listener: l, slots: p.slots}, nil
}

// ServeHTTP serves the HTTP proxy (CONNECT and plain HTTP) on l until
// Close.
func (p *Proxy) ServeHTTP(l net.Listener) error {
	ll, err := p.track(l)
	if err != nil {
		return nil
	}
	err = p.http.Serve(ll)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeSOCKS serves SOCKS5 on l until Close.
func (p *Proxy) ServeSOCKS(l net.Listener) error {
	ll, err := p.track(l)
	if err != nil {
		return nil
	}
	for {
		c, err := ll.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !p.add(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.remove(c)
			p.serveSOCKS(c)
		}()
	}
}

func (p *Proxy) add(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) remove(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops serving and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for _, l := range p.listeners {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	_ = p.http.Close()
	p.upstream.CloseIdleConnections()
	p.wg.Wait()
	return nil
}

// decide decides a connection to host:port for the client at peer and,
// when allowed, resolves the name and picks the address to dial. The
// record says what was decided; when target is invalid the connection is
// refused (and the record was reported).
func (p *Proxy) decide(ctx context.Context, proto, host string, port uint16, ends Endpoints) (netip.AddrPort, *Record) {
	rec := &Record{Time: time.Now(), Proto: proto, Host: host, Port: port, Decision: policy.Deny}
	if p.o.Owner != nil {
		rec.Owner = p.o.Owner(ends)
	}
	if p.o.RequireOwner && rec.Owner.Pid == 0 {
		rec.Reason = "the connection is not from the sandbox"
		p.report(rec)
		return netip.AddrPort{}, rec
	}
	h, err := policy.NormalizeHost(host)
	if err != nil {
		// The name is the workload's: quoted, it cannot span lines or
		// reach a terminal as escape sequences.
		rec.Host = strconv.QuoteToASCII(host)
		rec.Reason = "invalid host: " + err.Error()
		p.report(rec)
		return netip.AddrPort{}, rec
	}
	rec.Host = h
	if port == 0 {
		rec.Reason = "port 0"
		p.report(rec)
		return netip.AddrPort{}, rec
	}
	if p.o.Policy != nil {
		rec.Result = p.o.Policy.Decide(policy.NetQuery{Host: h, Port: port, Programs: rec.Owner.Programs})
	} else {
		rec.Result = policy.NetResult{Decision: policy.Deny}
	}
	rec.Decision = rec.Result.Decision
	if rec.Decision == policy.Ask {
		rec.Decision = policy.Deny
		if p.o.Ask != nil && p.o.Ask(rec) {
			rec.Decision = policy.Allow
		}
	}
	if rec.Decision != policy.Allow {
		p.report(rec)
		return netip.AddrPort{}, rec
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(h); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err = p.o.Resolve(rctx, h)
		cancel()
		if err != nil || len(addrs) == 0 {
			rec.Decision, rec.Reason = policy.Deny, fmt.Sprintf("%s does not resolve on the host", h)
			p.report(rec)
			return netip.AddrPort{}, rec
		}
	}
	// Each address is decided again against the rules: a rule naming an
	// address decides it whatever name led there, so a deny (or ask) rule
	// on an address is not bypassed by a name resolving to it. Address
	// rules only take away here: reaching an address that is not globally
	// reachable (the host's own addresses included) still takes a rule
	// naming the host asked for exactly.
	var why string
	for _, a := range addrs {
		a = a.Unmap()
		if an, err := policy.NormalizeHost(a.String()); err == nil && an != rec.Host && p.o.Policy != nil {
			ar := p.o.Policy.Decide(policy.NetQuery{Host: an, Port: port, Programs: rec.Owner.Programs})
			if ar.Rule != nil && ar.Decision != policy.Allow {
				if why == "" {
					why = fmt.Sprintf("%s resolves to %s, refused by %s", h, a, ar.RuleText())
				}
				continue
			}
		}
		if rec.Result.Exact || (Global(a) && !p.o.Local(a)) {
			rec.Addr = netip.AddrPortFrom(a, port).String()
			return netip.AddrPortFrom(a, port), rec
		}
		if why == "" {
			why = fmt.Sprintf("%s resolves to %s, which is not globally reachable or is the host's own (only a rule naming %s exactly reaches it; wildcards never do)", h, a, h)
		}
	}
	rec.Decision = policy.Deny
	rec.Reason = why
	p.report(rec)
	return netip.AddrPort{}, rec
}

func (p *Proxy) report(r *Record) {
	if p.o.OnRecord != nil {
		p.o.OnRecord(r)
	}
}

// peerOf returns the client's address of a connection on the loopback.
func peerOf(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// splitTarget splits an authority (host:port) with the given default port.
func splitTarget(authority string, def uint16) (string, uint16, error) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), def, nil
		}
		return "", 0, err
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q", port)
	}
	return host, uint16(n), nil
}

// denyBody is the one-line body of a refusal.
func denyBody(rec *Record) string {
	return fmt.Sprintf("cordon: denied: connect %s (rule: %s)\n", net.JoinHostPort(rec.Host, strconv.Itoa(int(rec.Port))), rec.RuleText())
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	ends := r.Context().Value(peerKey{}).(Endpoints)
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r, ends)
		return
	}
	// Go's server sets r.Host from an absolute request-URI, else from the
	// Host header, and drops the header. The request goes upstream with
	// the decided host as both its URL and its Host header, so the server
	// reached is never asked for another name than the one decided (a
	// Host header naming another site is replaced, not relayed). Each
	// request on a keep-alive connection comes through here: decided on
	// its own.
	if r.URL.Scheme != "" && r.URL.Scheme != "http" {
		http.Error(w, "cordon: only http:// URLs are proxied as plain requests; use CONNECT for https", http.StatusBadRequest)
		return
	}
	host, port, err := splitTarget(r.Host, 80)
	if err != nil || host == "" {
		http.Error(w, "cordon: a proxied request needs a host", http.StatusBadRequest)
		return
	}
	target, rec := p.decide(r.Context(), "http", host, port, ends)
	if !target.IsValid() {
		http.Error(w, strings.TrimSuffix(denyBody(rec), "\n"), http.StatusForbidden)
		return
	}
	start := time.Now()
	out := r.Clone(context.WithValue(r.Context(), dialKey{}, target))
	out.RequestURI = ""
	out.URL.Scheme = "http"
	out.URL.Host = net.JoinHostPort(rec.Host, strconv.Itoa(int(port)))
	if port == 80 {
		out.URL.Host = hostForURL(rec.Host)
	}
	out.Host = out.URL.Host
	for _, h := range r.Header.Values("Connection") {
		for _, f := range strings.Split(h, ",") {
			out.Header.Del(strings.TrimSpace(f))
		}
	}
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	up := &countReader{r: r.Body}
	out.Body = up
	if r.ContentLength == 0 {
		out.Body = nil
	}
	resp, err := p.upstream.RoundTrip(out)
	if err != nil {
		rec.Reason = "upstream: " + err.Error()
		rec.Duration = time.Since(start)
		p.report(rec)
		http.Error(w, "cordon: "+rec.Reason, http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range resp.Header.Values("Connection") {
		for _, f := range strings.Split(h, ",") {
			resp.Header.Del(strings.TrimSpace(f))
		}
	}
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	n, _ := io.Copy(w, resp.Body)
	rec.BytesUp, rec.BytesDown, rec.Duration = up.n.Load(), n, time.Since(start)
	p.report(rec)
}

func hostForURL(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

type countReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countReader) Close() error { return c.r.Close() }

func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request, ends Endpoints) {
	host, port, err := splitTarget(r.RequestURI, 0)
	if err != nil || host == "" || port == 0 {
		http.Error(w, "cordon: CONNECT needs HOST:PORT", http.StatusBadRequest)
		return
	}
	target, rec := p.decide(r.Context(), "connect", host, port, ends)
	if !target.IsValid() {
		w.Header().Set("Connection", "close")
		http.Error(w, strings.TrimSuffix(denyBody(rec), "\n"), http.StatusForbidden)
		return
	}
	start := time.Now()
	upc, err := p.dialChecked(r.Context(), target, rec, start)
	if err != nil {
		http.Error(w, "cordon: "+rec.Reason, http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upc.Close()
		http.Error(w, "cordon: cannot tunnel", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		upc.Close()
		return
	}
	// The header-read deadline was set on the raw connection; a tunnel
	// lives as long as its ends.
	_ = c.SetDeadline(time.Time{})
	if !p.add(c) {
		c.Close()
		upc.Close()
		return
	}
	defer p.remove(c)
	defer upc.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after its CONNECT header are already buffered.
	var pre int64
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := upc.Write(b); err != nil {
			return
		}
		pre = int64(n)
	}
	up, down := splice(c, upc)
	rec.BytesUp, rec.BytesDown, rec.Duration = up+pre, down, time.Since(start)
	p.report(rec)
}

// splice copies both ways until both directions end, half-closing as each
// side finishes, and returns the bytes sent up (client to server) and down.
func splice(client, server net.Conn) (up, down int64) {
	// Copy between the kernel's sockets themselves: io.Copy between two
	// *net.TCPConn uses splice(2), so the bytes never enter user space.
	if sc, ok := client.(*slotConn); ok {
		client = sc.Conn
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		up, _ = io.Copy(server, client)
		closeWrite(server)
	}()
	down, _ = io.Copy(client, server)
	closeWrite(client)
	wg.Wait()
	return up, down
}

func closeWrite(c net.Conn) {
	type cw interface{ CloseWrite() error }
	if x, ok := c.(cw); ok {
		_ = x.CloseWrite()
		return
	}
	if sc, ok := c.(*slotConn); ok {
		closeWrite(sc.Conn)
		return
	}
	_ = c.Close()
}

// dialChecked dials the address the decision checked, within the dial
// bound; a failure is recorded (reason, duration) and reported, so the
// caller only answers its client.
func (p *Proxy) dialChecked(ctx context.Context, target netip.AddrPort, rec *Record, start time.Time) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := p.o.Dial(ctx, target)
	if err != nil {
		rec.Reason = "dial " + target.String() + ": " + err.Error()
		rec.Duration = time.Since(start)
		p.report(rec)
	}
	return c, err
}
