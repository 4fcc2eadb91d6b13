package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// socksDial asks the SOCKS5 server at addr for a connection to host:port
// by name (remote resolution) and returns the reply code.
func socksDial(t *testing.T, addr, host string, port uint16) byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte{5, 1, 0})
	require.NoError(t, err)
	b := make([]byte, 2)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	require.Equal(t, []byte{5, 0}, b)
	req := append([]byte{5, 1, 0, 3, byte(len(host))}, host...)
	req = append(req, byte(port>>8), byte(port))
	_, err = c.Write(req)
	require.NoError(t, err)
	rep := make([]byte, 10)
	_, err = io.ReadFull(c, rep)
	require.NoError(t, err)
	return rep[1]
}

// echoServer answers every request with the Host it was asked for.
func echoServer(t *testing.T) (*httptest.Server, uint16) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s path=%s", r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
}

type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) add(rec *Record) {
	r.mu.Lock()
	r.recs = append(r.recs, *rec)
	r.mu.Unlock()
}

func (r *recorder) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// startProxy serves a proxy with rules on two loopback listeners.
func startProxy(t *testing.T, o Options, rules ...string) (httpAddr, socksAddr string, rec *recorder) {
	t.Helper()
	nw := &policy.Network{}
	for _, s := range rules {
		d, text, _ := strings.Cut(s, " ")
		dec, err := policy.ParseDecision(d)
		require.NoError(t, err)
		r, err := policy.ParseNetRule(dec, text)
		require.NoError(t, err)
		r.Source = "test"
		nw.Rules = append(nw.Rules, r)
	}
	pol, err := policy.Compile(policy.Config{Network: nw})
	require.NoError(t, err)
	rec = &recorder{}
	o.Policy, o.OnRecord = pol.Network(), rec.add
	p := New(o)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = p.ServeHTTP(hl) }()
	go func() { _ = p.ServeSOCKS(sl) }()
	t.Cleanup(func() { _ = p.Close() })
	return hl.Addr().String(), sl.Addr().String(), rec
}

func httpClient(proxyAddr string) *http.Client {
	u, _ := url.Parse("http://" + proxyAddr)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyPlainHTTP(t *testing.T) {
	_, port := echoServer(t)
	h, _, rec := startProxy(t, Options{}, fmt.Sprintf("allow 127.0.0.1:%d", port), fmt.Sprintf("allow localhost:%d", port))
	c := httpClient(h)
	code, body := get(t, c, fmt.Sprintf("http://127.0.0.1:%d/a", port))
	assert.Equal(t, 200, code)
	assert.Equal(t, fmt.Sprintf("host=127.0.0.1:%d path=/a", port), body)
	// Upper case and a trailing dot are the same name; the server is
	// asked for the name decided.
	code, body = get(t, c, fmt.Sprintf("http://LocalHost.:%d/b", port))
	assert.Equal(t, 200, code)
	assert.Equal(t, fmt.Sprintf("host=localhost:%d path=/b", port), body)
	// Another port of the same host: denied, with the rule in the body.
	code, body = get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port+1))
	assert.Equal(t, 403, code)
	assert.Contains(t, body, fmt.Sprintf("cordon: denied: connect 127.0.0.1:%d (rule: no network rule allows it", port+1))
	recs := rec.all()
	require.Len(t, recs, 3)
	assert.Equal(t, policy.Allow, recs[0].Decision)
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), recs[0].Addr)
	assert.Positive(t, recs[0].BytesDown)
	assert.Equal(t, policy.Deny, recs[2].Decision)
}

// TestProxyKeepAliveHostMismatch sends requests on one connection: each is
// decided on its own, and a Host header that names another site than the
// request URI is never relayed.
func TestProxyKeepAliveHostMismatch(t *testing.T) {
	_, port := echoServer(t)
	h, _, _ := startProxy(t, Options{}, fmt.Sprintf("allow 127.0.0.1:%d", port))
	c, err := net.Dial("tcp", h)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(target, host string) (*http.Response, string) {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	allowed := fmt.Sprintf("127.0.0.1:%d", port)
	resp, body := send("http://"+allowed+"/1", "evil.example")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "host="+allowed+" path=/1", body, "the upstream must see the decided host, not the Host header")
	resp, body = send(fmt.Sprintf("http://127.0.0.1:%d/2", port+1), allowed)
	assert.Equal(t, 403, resp.StatusCode, "the request URI decides, not a Host header naming an allowed host")
	assert.Contains(t, body, "denied")
	// Origin-form (no absolute URI): decided on the Host header.
	resp, _ = send("/3", fmt.Sprintf("127.0.0.1:%d", port+1))
	assert.Equal(t, 403, resp.StatusCode)
	resp, body = send("/4", allowed)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "host="+allowed+" path=/4", body)
}

func TestProxyConnectAndSOCKS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls ok")
	}))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	h, s, rec := startProxy(t, Options{}, fmt.Sprintf("allow 127.0.0.1:%d", port), "allow *:*")
	u, _ := url.Parse("http://" + h)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(u)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	code, body := get(t, c, srv.URL)
	assert.Equal(t, 200, code)
	assert.Equal(t, "tls ok", body)

	// "*" never reaches a loopback address, by address or by name.
	for _, target := range []string{fmt.Sprintf("127.0.0.2:%d", port), fmt.Sprintf("localhost:%d", port), fmt.Sprintf("[::1]:%d", port)} {
		conn, err := net.Dial("tcp", h)
		require.NoError(t, err)
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		assert.Equal(t, 403, resp.StatusCode, target)
		conn.Close()
	}
	last := rec.all()[len(rec.all())-1]
	assert.Contains(t, last.RuleText(), "not globally reachable")

	// SOCKS5 with a name: resolved by the proxy, refused when not allowed.
	assert.Equal(t, byte(0), socksDial(t, s, "127.0.0.1", port))
	assert.Equal(t, byte(2), socksDial(t, s, "localhost", port), "want 2: connection not allowed by ruleset")
	assert.Equal(t, byte(2), socksDial(t, s, "LOCALHOST.", port))
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// TestProxySlowlorisAndBurst: a client that never finishes its header
// loses its slot, a burst of connections beyond the bound queues and is
// served, and no descriptor is left behind.
func TestProxySlowlorisAndBurst(t *testing.T) {
	_, port := echoServer(t)
	h, s, _ := startProxy(t, Options{MaxConns: 8, HeaderTimeout: 300 * time.Millisecond}, fmt.Sprintf("allow 127.0.0.1:%d", port))
	c := httpClient(h)
	before := openFDs(t)

	// Slowloris: more half-sent headers than slots, on both listeners.
	var slow []net.Conn
	for i := 0; i < 20; i++ {
		for _, addr := range []string{h, s} {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			_, _ = conn.Write([]byte("G"))
			slow = append(slow, conn)
		}
	}
	// Each is closed by the proxy once its time is up...
	for _, conn := range slow {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.ReadAll(conn)
		assert.NoError(t, err, "the proxy must close a connection that never sends its header")
		conn.Close()
	}
	// ... and real requests are served.
	code, _ := get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port))
	assert.Equal(t, 200, code)

	// Burst: 2,000 connections opened and closed at once.
	var wg sync.WaitGroup
	for i := 0; i < 2000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if conn, err := net.Dial("tcp", h); err == nil {
				conn.Close()
			}
		}()
	}
	wg.Wait()
	code, _ = get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port))
	assert.Equal(t, 200, code)
	c.CloseIdleConnections()
	// The proxy may still be accepting (and closing) the burst's queued
	// connections, each an fd for a moment: a leak is a count that stays
	// above the start, so the count must hold at or below it for 200 ms.
	deadline := time.Now().Add(10 * time.Second)
	n, steady := 0, 0
	for steady < 10 && time.Now().Before(deadline) {
		if n = openFDs(t); n <= before {
			steady++
		} else {
			steady = 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, 10, steady, "descriptors leaked: %d open, %d before", n, before)
}
